"""The hand-written corpus, one module per group; ``GROUPS`` lists them in file order."""

from __future__ import annotations

from .api import api
from .config import config
from .dsl import Corpus
from .events import events
from .forms import catalog, forms
from .recursive import recursive
from .tools import tools

GROUPS: list[Corpus] = [api, config, tools, events, forms, catalog, recursive]
