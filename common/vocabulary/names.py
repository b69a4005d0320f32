"""Tool-name comparison: normalised keys and confusable skeletons.

``name_key`` is how names are compared for allow lists and lookups (NFKC, case
and whitespace folded). ``name_skeleton`` additionally folds characters that
look alike (Cyrillic and Greek letters that mimic Latin ones, ``0``/``o``,
``1``/``l``/``I``/``i``, ``rn``/``m``) so two names that a person or a model would
read as the same collide. Accents are stripped too (``café`` and ``cafe``
collide): a distinction nobody sees is no distinction. The registry refuses
such collisions and deny lists match on skeletons, so a look-alike name can never dodge a denial.
"""

from __future__ import annotations

import unicodedata
from types import MappingProxyType
from typing import Final

# Applied before case folding, so upper- and lower-case forms that look
# different (Greek capital eta looks like H, small eta like n) map separately.
_CONFUSABLES: Final[MappingProxyType[str, str]] = MappingProxyType(
    {
        # Cyrillic lower case
        "\u0430": "a",  # cyrillic small letter a
        "\u0432": "b",  # cyrillic small letter ve
        "\u0501": "d",  # cyrillic small letter komi de
        "\u0435": "e",  # cyrillic small letter ie
        "\u0451": "e",  # cyrillic small letter io
        "\u04bb": "h",  # cyrillic small letter shha
        "\u0456": "i",  # cyrillic small letter byelorussian-ukrainian i
        "\u0457": "i",  # cyrillic small letter yi
        "\u0458": "j",  # cyrillic small letter je
        "\u043a": "k",  # cyrillic small letter ka
        "\u04cf": "l",  # cyrillic small letter palochka
        "\u043c": "m",  # cyrillic small letter em
        "\u043d": "h",  # cyrillic small letter en
        "\u043e": "o",  # cyrillic small letter o
        "\u0440": "p",  # cyrillic small letter er
        "\u051b": "q",  # cyrillic small letter qa
        "\u0433": "r",  # cyrillic small letter ghe
        "\u0455": "s",  # cyrillic small letter dze
        "\u0442": "t",  # cyrillic small letter te
        "\u0446": "u",  # cyrillic small letter tse
        "\u0475": "v",  # cyrillic small letter izhitsa
        "\u051d": "w",  # cyrillic small letter we
        "\u0445": "x",  # cyrillic small letter ha
        "\u0443": "y",  # cyrillic small letter u
        "\u04af": "y",  # cyrillic small letter straight u
        "\u044c": "b",  # cyrillic small letter soft sign
        # Cyrillic upper case
        "\u0410": "A",  # cyrillic capital letter a
        "\u0412": "B",  # cyrillic capital letter ve
        "\u0415": "E",  # cyrillic capital letter ie
        "\u0401": "E",  # cyrillic capital letter io
        "\u041d": "H",  # cyrillic capital letter en
        "\u0406": "I",  # cyrillic capital letter byelorussian-ukrainian i
        "\u0408": "J",  # cyrillic capital letter je
        "\u041a": "K",  # cyrillic capital letter ka
        "\u041c": "M",  # cyrillic capital letter em
        "\u041e": "O",  # cyrillic capital letter o
        "\u0420": "P",  # cyrillic capital letter er
        "\u0421": "C",  # cyrillic capital letter es
        "\u0441": "c",  # cyrillic small letter es
        "\u0405": "S",  # cyrillic capital letter dze
        "\u0422": "T",  # cyrillic capital letter te
        "\u0425": "X",  # cyrillic capital letter ha
        "\u0423": "Y",  # cyrillic capital letter u
        "\u04ae": "Y",  # cyrillic capital letter straight u
        "\u051c": "W",  # cyrillic capital letter we
        "\u04c0": "l",  # cyrillic letter palochka
        # Greek lower case
        "\u03b1": "a",  # greek small letter alpha
        "\u03b2": "b",  # greek small letter beta
        "\u03b3": "y",  # greek small letter gamma
        "\u03b5": "e",  # greek small letter epsilon
        "\u03b7": "n",  # greek small letter eta
        "\u03b9": "i",  # greek small letter iota
        "\u03ba": "k",  # greek small letter kappa
        "\u03bd": "v",  # greek small letter nu
        "\u03bf": "o",  # greek small letter omicron
        "\u03c1": "p",  # greek small letter rho
        "\u03c3": "o",  # greek small letter sigma
        "\u03c4": "t",  # greek small letter tau
        "\u03c5": "u",  # greek small letter upsilon
        "\u03c7": "x",  # greek small letter chi
        "\u03c9": "w",  # greek small letter omega
        "\u03bc": "u",  # greek small letter mu
        "\u03f2": "c",  # greek lunate sigma symbol
        # Greek upper case
        "\u0391": "A",  # greek capital letter alpha
        "\u0392": "B",  # greek capital letter beta
        "\u0395": "E",  # greek capital letter epsilon
        "\u0396": "Z",  # greek capital letter zeta
        "\u0397": "H",  # greek capital letter eta
        "\u0399": "I",  # greek capital letter iota
        "\u039a": "K",  # greek capital letter kappa
        "\u039c": "M",  # greek capital letter mu
        "\u039d": "N",  # greek capital letter nu
        "\u039f": "O",  # greek capital letter omicron
        "\u03a1": "P",  # greek capital letter rho
        "\u03a4": "T",  # greek capital letter tau
        "\u03a5": "Y",  # greek capital letter upsilon
        "\u03a7": "X",  # greek capital letter chi
        # Latin and digit look-alikes
        "0": "o",
        "1": "l",
        "|": "l",
        "\u0131": "i",  # latin small letter dotless i
        "\u0237": "j",  # latin small letter dotless j
        "\u0251": "a",  # latin small letter alpha
        "\u0261": "g",  # latin small letter script g
        "\u0269": "i",  # latin small letter iota
        "\u028b": "u",  # latin small letter v with hook
    }
)
_CONFUSABLE_TABLE: Final = str.maketrans(dict(_CONFUSABLES))

_I_L_TABLE: Final = str.maketrans({"i": "l"})

# Multi-character look-alikes, applied after case folding.
_SEQUENCES: Final[tuple[tuple[str, str], ...]] = (("rn", "m"), ("vv", "w"))


def _drop_invisible(text: str) -> str:
    # Format characters (zero-width joiners, bidi controls, tag characters)
    # render as nothing, so they must not make two names differ.
    return "".join(ch for ch in text if unicodedata.category(ch) != "Cf")


def name_key(name: str) -> str:
    """The comparison key of a tool name: NFKC, whitespace collapsed, case folded."""
    return " ".join(unicodedata.normalize("NFKC", name).split()).casefold()


def name_skeleton(name: str) -> str:
    """A key under which names that look alike are equal (NFKC + confusables + casefold)."""
    text = _drop_invisible(unicodedata.normalize("NFKC", name))
    # Strip combining marks so "e" + U+0301 and a bare "e" do not hide a lookalike.
    text = "".join(ch for ch in unicodedata.normalize("NFD", text) if not unicodedata.combining(ch))
    text = " ".join(text.translate(_CONFUSABLE_TABLE).split()).casefold()
    # After case folding Latin capital I is "i", and it looks like "l": fold the
    # whole i/l/1/| family together so the skeleton stays case-insensitive.
    text = text.translate(_CONFUSABLE_TABLE).translate(_I_L_TABLE)
    for sequence, replacement in _SEQUENCES:
        text = text.replace(sequence, replacement)
    return text
