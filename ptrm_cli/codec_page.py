"""What `ptrm codecs TYPE` tells a user about one puzzle type, gathered from the codec itself
(its `rules`, `example`, `legend` and docstring) and from the bundled model's config.json.
The command prints it (commands/codecs.py); nothing here is written twice: the example's URL
and pzprv3 forms come from the codec's own writers, the legend from `codec.legend_of`."""

from __future__ import annotations

import inspect
import sys
from dataclasses import dataclass, field
from typing import Any

from . import codec as registry
from .codec import Codec, Puzzle
from .errors import PtrmError

#: how the page names the forms `Parsed.format` reports, in the order it lists them
FORMS = {"url": "puzz.link URL", "pzprv3": "pzprv3 (what puzz.link saves)",
         "grid": "plain grid", "pair": "JSON pair", "task": "JSON task"}


@dataclass
class Example:
    """The codec's example puzzle, and its text in each input form the codec writes."""
    puzzle: Puzzle
    forms: dict[str, str] = field(default_factory=dict)  # Parsed.format -> text
    own: str = "grid"  # the form the codec's `example` is written in


def example_of(codec: Codec) -> Example | None:
    """The codec's `example`, read by its own `parse`, with the URL and pzprv3 texts its
    writers give for it (a form it has no writer for is left out). None without an example;
    an example its own codec cannot read is the codec's bug (a CodecBug)."""
    if not codec.example:
        return None
    try:
        with registry.contract(codec, "parse"):
            parsed = codec.parse(codec.example, source=f"{codec.name}.example")
    except registry.CodecBug:
        raise
    except PtrmError as e:
        raise registry.bug(codec, f"has an example its parse does not read: {e}") from None
    if not isinstance(parsed, registry.Parsed):
        raise registry.bug(codec, f"parse returned {type(parsed).__name__} for its example")
    out = Example(parsed.puzzle, {parsed.format: codec.example}, parsed.format)
    for form, write in (("url", codec.to_url), ("pzprv3", codec.to_pzprv3)):
        if form in out.forms:
            continue
        try:
            with registry.contract(codec, f"to_{form}"):
                text = write(parsed.puzzle)
        except registry.CodecBug:
            raise
        except PtrmError:  # the codec has no such form
            continue
        if isinstance(text, str) and text.strip():
            out.forms[form] = text.strip()
    out.forms = {f: out.forms[f] for f in sorted(out.forms, key=_form_order)}
    return out


def _form_order(form: str) -> int:
    return list(FORMS).index(form) if form in FORMS else len(FORMS)


def form_name(form: str) -> str:
    return FORMS.get(form, form)


def model_standing(codec: Codec) -> str | None:
    """Where the bundled model stands on this type, in a sentence, from its config.json: which
    size it trained on and its validation score there (one noiseless pass, the trainer's
    measure). None without a bundled model."""
    from .models import default_card, not_for

    card = default_card()
    if card is None:
        return None
    family, meta = card
    name = codec.name
    if family not in {f.name for f in codec.families}:
        return (f"{not_for(name, family, [f.name for f in codec.families])}: give -c "
                f"CHECKPOINT, a model trained on {name}")
    trained = meta.get("trained_on")
    size = trained.get(name, trained.get("*")) if isinstance(trained, dict) else None
    if not isinstance(size, str):
        return (f"the bundled model reads {name}'s token family ({family}) but did not train "
                f"on {name}: it may not find a valid answer")
    out = (f"the bundled model trained on {name} puzzles of any size" if size.lower() == "any"
           else f"the bundled model trained on {size} {name} puzzles")
    val = meta.get("val") if isinstance(meta.get("val"), dict) else {}
    scores = val.get("exact_accuracy_by_type")  # read as plain JSON: any shape may be there
    score = scores.get(name) if isinstance(scores, dict) else None
    if isinstance(score, (int, float)) and not isinstance(score, bool):
        steps = val.get("steps")
        # the trainer's own measure, as saved with the weights: `ptrm eval` on the same
        # puzzles judges by the rules on other kernels, so its TRM column differs by a few
        out += (f"; it got {score:.0%} of its validation {name} puzzles exactly right (by "
                f"their labels) in the trainer's noiseless pass"
                f"{f' of {steps} steps' if isinstance(steps, int) else ''} "
                "(`ptrm solve` adds noisy rollouts and checks each against the rules; "
                "`ptrm eval` measures both)")
    return out


def docstring(codec: Codec) -> str | None:
    """The codec class's own docstring, else its module's: a base class's says nothing of this
    type (docs/PLUGINS.md asks plugins to document clues, answers and formats there)."""
    cls = type(codec)
    own = cls.__dict__.get("__doc__")
    return inspect.cleandoc(own) if own else inspect.getdoc(sys.modules.get(cls.__module__))


def own_members(codec: Codec) -> list[str]:
    """The contract's methods with a default that this codec writes itself (`sniff`,
    `to_url`, ...), read from the Codec class, so that a new optional method is listed too."""
    optional = [n for n, v in vars(Codec).items() if callable(v) and not n.startswith("_")
                and not getattr(v, "__isabstractmethod__", False)]
    return [n for n in optional if getattr(type(codec), n, None) is not getattr(Codec, n)]


def as_json(codec: Codec, example: Example | None) -> dict[str, Any]:
    """The page's content for `ptrm codecs TYPE --json` (besides name, provider and doc)."""
    return {"rules": registry.rules_of(codec) or None,
            "examples": dict(example.forms) if example is not None else {},
            "legend": registry.legend_json(codec),
            "bundled_model": model_standing(codec)}
