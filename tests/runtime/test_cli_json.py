"""``tokensieve generate --schema FILE`` and ``--json``, run in-process."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from tokensieve import GrammarMatcher, cli

PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 20},
        "age": {"type": "integer", "minimum": 0, "maximum": 120},
        "pets": {"type": "array", "items": {"enum": ["cat", "dog", "fish"]}, "maxItems": 3},
    },
    "required": ["name", "age"],
    "additionalProperties": False,
}


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = cli.main(["generate", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_help_lists_the_json_options(capsys) -> None:
    with pytest.raises(SystemExit) as info:
        cli.main(["generate", "--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    assert "--schema" in out and "--json" in out and "--indent" in out


def test_bad_schema_exits_2_with_the_pointer(capsys, tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"type": "object", "properties": {"age": {"minimum": "x"}}}))
    code, out, err = _run(capsys, "--schema", str(path), "Who?")
    assert code == 2 and out == ""
    assert "invalid --schema" in err and "/properties/age/minimum" in err
    assert "Traceback" not in err


def test_schema_that_is_not_json_exits_2(capsys, tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('{"type": "object",,}')
    code, out, err = _run(capsys, "--schema", str(path), "Who?")
    assert code == 2 and out == "" and "line 1" in err


def test_missing_schema_file_exits_2(capsys, tmp_path: Path) -> None:
    code, out, err = _run(capsys, "--schema", str(tmp_path / "nope.json"), "Who?")
    assert code == 2 and out == "" and "cannot read --schema" in err


def test_unsupported_keyword_needs_lenient(capsys, tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"type": "array", "uniqueItems": True}))
    code, _, err = _run(capsys, "--schema", str(path), "List")
    assert code == 2 and "/uniqueItems" in err


def test_json_options_need_a_json_constraint(capsys) -> None:
    code, out, err = _run(capsys, "--regex", "a+", "--indent", "2", "Go")
    assert code == 2 and out == "" and "--schema or --json" in err


def test_schema_and_json_are_exclusive(capsys, tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text("{}")
    with pytest.raises(SystemExit) as info:
        cli.main(["generate", "--schema", str(path), "--json", "Go"])
    assert info.value.code == 2
    capsys.readouterr()


# ---------------------------------------------------------------- the model
@pytest.fixture()
def shared_loader(monkeypatch):
    """Make the command reuse the model the test session already loaded."""
    from runtime.model_support import shared_model

    loaded = shared_model()
    import tokensieve.runtime as runtime

    monkeypatch.setattr(runtime, "load_model", lambda *a, **k: loaded)
    return loaded


def _samples(capsys: pytest.CaptureFixture[str], path: Path, schema: dict, n: int) -> list[str]:
    """Write ``schema`` to ``path`` and generate ``n`` people under it; the output lines."""
    path.write_text(json.dumps(schema))
    code, out, err = _run(
        capsys,
        "--schema",
        str(path),
        "--n",
        str(n),
        "--temperature",
        "1.0",
        "--max-tokens",
        "80",
        "Describe a person.",
    )
    assert code == 0, err
    lines = out.rstrip("\n").split("\n")
    assert len(lines) == n
    return lines


@pytest.mark.slow
@pytest.mark.model
@pytest.mark.xdist_group("smollm2")
def test_schema_output_parses_and_validates(capsys, tmp_path: Path, shared_loader) -> None:
    for line in _samples(capsys, tmp_path / "person.json", PERSON, 2):
        jsonschema.validate(json.loads(line), PERSON)


@pytest.mark.slow
@pytest.mark.model
@pytest.mark.xdist_group("smollm2")
def test_objects_take_only_the_named_keys_unless_opened(capsys, tmp_path: Path, shared_loader) -> None:
    silent = {k: v for k, v in PERSON.items() if k != "additionalProperties"}
    path = tmp_path / "person.json"
    for line in _samples(capsys, path, silent, 4):
        # the oracle: the schema with additionalProperties: false written in, as OpenAI's strict mode reads it
        jsonschema.validate(json.loads(line), PERSON)
    # --open-objects compiles JSON Schema's own language: a key the schema does not name is accepted
    args = cli.build_parser().parse_args(["generate", "--schema", str(path), "--open-objects", "Go"])
    _, schema, options = cli._check_constraint(args)
    compiled = shared_loader.compiler.compile_json_schema(schema, **options)
    assert GrammarMatcher(compiled).accept_string('{"name":"a","age":3,"nickname":"b"}')
    closed_args = cli.build_parser().parse_args(["generate", "--schema", str(path), "Go"])
    closed = shared_loader.compiler.compile_json_schema(schema, **cli._check_constraint(closed_args)[2])
    assert not GrammarMatcher(closed).accept_string('{"name":"a","age":3,"nickname":"b"}')


@pytest.mark.slow
@pytest.mark.model
@pytest.mark.xdist_group("smollm2")
def test_indented_schema_output(capsys, tmp_path: Path, shared_loader) -> None:
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string", "maxLength": 12}},
        "required": ["city"],
    }
    schema["additionalProperties"] = False
    path = tmp_path / "city.json"
    path.write_text(json.dumps(schema))
    code, out, err = _run(
        capsys, "--schema", str(path), "--indent", "2", "--temperature", "0", "Name a city."
    )
    assert code == 0, err
    text = out[:-1]
    value = json.loads(text)
    jsonschema.validate(value, schema)
    assert text == json.dumps(value, indent=2, ensure_ascii=False) or text == json.dumps(value, indent=2)


@pytest.mark.slow
@pytest.mark.model
@pytest.mark.xdist_group("smollm2")
def test_any_json_output_parses(capsys, shared_loader) -> None:
    code, out, err = _run(
        capsys, "--json", "--max-tokens", "60", "--seed", "3", "Give a JSON list of three colours."
    )
    assert code == 0, err
    json.loads(out[:-1])
