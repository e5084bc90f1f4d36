"""Reading the prompt templates: the user's own copies first, then the shipped ones.

Loading checks every template at once, so a broken one stops mala-tui at start
with the file's path, instead of failing at the first restart.
"""

from __future__ import annotations

from pathlib import Path

from mala_tui.core.prompts import REQUIRED_FIELDS, PromptKind, PromptSet, PromptTemplateError
from mala_tui.resources import shipped_folder
from mala_tui.text_files import read_text


def load_prompts(user_dir: Path | None = None) -> PromptSet:
    """Templates from `user_dir` (e.g. ~/.config/mala-tui/prompts) where present, else shipped.

    Raises:
        PromptTemplateError: a template that cannot be read or used; the message names the file.
    """
    shipped = shipped_folder("prompts")
    templates: dict[PromptKind, tuple[str, str]] = {}
    for kind in REQUIRED_FIELDS:
        name = f"{kind.value}.md"
        own = user_dir / name if user_dir is not None else None
        try:
            if own is not None and own.is_file():
                templates[kind] = (str(own), read_text(own))
            else:
                source = shipped.joinpath(name)
                templates[kind] = (f"shipped {name}", source.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as exc:
            where = own if own is not None and own.is_file() else name
            said = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            raise PromptTemplateError(f"{where}: cannot be read: {said}") from None
    return PromptSet.checked(templates)
