"""``tokensieve generate --grammar FILE``, run in-process.

The generated text is checked with the Earley recogniser in ``tests/support``
(independent of the pushdown engine that constrained the generation).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.earley import Earley

from tokensieve import cli
from tokensieve.grammar.cfg import Grammar

DATA = Path(__file__).resolve().parents[1] / "grammar" / "data"


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = cli.main(["generate", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_bad_grammar_exits_2_with_the_position(capsys, tmp_path: Path) -> None:
    path = tmp_path / "bad.gbnf"
    path.write_text('root ::= "a" (\n')
    code, out, err = _run(capsys, "--grammar", str(path), "Go")
    assert code == 2 and out == ""
    assert "invalid --grammar" in err and "line" in err and "Traceback" not in err


def test_missing_grammar_file_exits_2(capsys, tmp_path: Path) -> None:
    code, out, err = _run(capsys, "--grammar", str(tmp_path / "nope.gbnf"), "Go")
    assert code == 2 and out == "" and "cannot read --grammar" in err


def test_syntax_needs_grammar(capsys) -> None:
    code, out, err = _run(capsys, "--regex", "a+", "--syntax", "lark", "Go")
    assert code == 2 and out == "" and "--syntax goes with --grammar" in err


@pytest.fixture()
def shared_loader(monkeypatch):
    """Make the command reuse the model the test session already loaded."""
    from runtime.model_support import shared_model

    loaded = shared_model()
    import tokensieve.runtime as runtime

    monkeypatch.setattr(runtime, "load_model", lambda *a, **k: loaded)
    return loaded


@pytest.mark.slow
@pytest.mark.model
@pytest.mark.xdist_group("smollm2")
@pytest.mark.parametrize("name", ["arithmetic.gbnf", "expr.lark"])
def test_grammar_output_is_a_sentence(capsys, shared_loader, name: str) -> None:
    path = DATA / name
    text = path.read_text(encoding="utf-8")
    grammar = Grammar.from_lark(text) if name.endswith(".lark") else Grammar.from_gbnf(text)
    oracle = Earley(grammar)
    for seed in ("0", "5"):
        code, out, err = _run(
            capsys,
            "--grammar",
            str(path),
            "--seed",
            seed,
            "--temperature",
            "1.0",
            "--max-tokens",
            "48",
            "Write a calculation.",
        )
        assert code == 0, err
        assert out.endswith("\n")
        sample = out[:-1]  # the command ends each sample with a newline
        assert oracle.complete(sample), repr(sample)
