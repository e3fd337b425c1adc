"""Token tables as data.

A `Vocab` is an ordered list of token names; the id of a token is its position. Every dataset
and checkpoint stores its vocabulary (as `{"family": ..., "tokens": [...]}`), and loading checks
it against the codec's, so a model never silently reads garbage when the installed codecs
change. Id 0 is always "pad", which TRM treats as "ignore" in labels.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .errors import VocabError

PAD = "pad"


@dataclass(frozen=True)
class Vocab:
    family: str
    tokens: tuple[str, ...]
    _ids: dict = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self):
        if not self.tokens or self.tokens[0] != PAD:
            raise VocabError(f"vocabulary {self.family!r} must start with {PAD!r} (id 0)")
        ids = {}
        for i, name in enumerate(self.tokens):
            if name in ids:
                raise VocabError(f"vocabulary {self.family!r} lists token {name!r} twice")
            ids[name] = i
        object.__setattr__(self, "_ids", ids)

    def __len__(self) -> int:
        return len(self.tokens)

    def __contains__(self, name: str) -> bool:
        return name in self._ids

    def id(self, name: str) -> int:
        try:
            return self._ids[name]
        except KeyError:
            raise VocabError(f"token {name!r} is not in the {self.family!r} vocabulary "
                             f"({len(self)} tokens)") from None

    def name(self, token_id: int) -> str:
        if not 0 <= token_id < len(self.tokens):
            raise VocabError(f"token id {token_id} is outside the {self.family!r} vocabulary "
                             f"(0..{len(self) - 1})")
        return self.tokens[token_id]

    def ids_with_prefix(self, prefix: str) -> list[int]:
        return [i for i, t in enumerate(self.tokens) if t.startswith(prefix)]

    # -- persistence -----------------------------------------------------------------------
    def to_json(self) -> dict:
        return {"family": self.family, "tokens": list(self.tokens)}

    @classmethod
    def from_json(cls, obj: dict) -> "Vocab":
        try:
            return cls(str(obj["family"]), tuple(str(t) for t in obj["tokens"]))
        except (KeyError, TypeError) as e:
            raise VocabError(f"malformed vocabulary table: {e}") from None

    def check_same(self, other: "Vocab", *, what: str, other_what: str) -> None:
        """Raise a clear error unless `other` is exactly this table."""
        if self == other:
            return
        if self.family != other.family:
            raise VocabError(f"{what} uses the {self.family!r} vocabulary but {other_what} uses "
                             f"{other.family!r}")
        for i, (a, b) in enumerate(zip(self.tokens, other.tokens)):
            if a != b:
                raise VocabError(f"{what} and {other_what} disagree on token id {i}: "
                                 f"{a!r} vs {b!r} (family {self.family!r})")
        raise VocabError(f"{what} has {len(self)} tokens but {other_what} has {len(other)} "
                         f"(family {self.family!r})")
