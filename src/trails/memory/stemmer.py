"""English word-form normalisation for recall: the Porter2 (Snowball English) stemmer.

Recall matches words, so "renewed", "renewing" and "renewal" must meet, as
must "deployed" and "deployment", "rotated" and "rotation", "approves" and
"approval". Inflections alone (-s, -ed, -ing) are not enough: agents ask with
the noun where the memory has the verb. This module implements the published
Porter2 algorithm (the Snowball "english" stemmer): it removes inflectional
and derivational suffixes within the word's R1 / R2 regions, so short words
keep their shape ("news", "owner", "status" are left alone) and longer words
lose their suffixes step by step.

Only ASCII alphabetic words are stemmed; anything else (numbers, identifiers
with digits, non-Latin scripts) is returned as is, so a name in another
script is matched exactly. Results are cached: a corpus has far fewer
distinct words than tokens.
"""

from __future__ import annotations

from functools import lru_cache

__all__ = ["stem"]

_VOWELS = frozenset("aeiouy")
_DOUBLES = ("bb", "dd", "ff", "gg", "mm", "nn", "pp", "rr", "tt")
_LI_ENDINGS = frozenset("cdeghkmnrt")

# whole words with a fixed stem (from the algorithm's exceptional forms)
_EXCEPTIONS = {
    "skis": "ski",
    "skies": "sky",
    "dying": "die",
    "lying": "lie",
    "tying": "tie",
    "idly": "idl",
    "gently": "gentl",
    "ugly": "ugli",
    "early": "earli",
    "only": "onli",
    "singly": "singl",
    "sky": "sky",
    "news": "news",
    "howe": "howe",
    "atlas": "atlas",
    "cosmos": "cosmos",
    "bias": "bias",
    "andes": "andes",
}
# left alone after step 1a
_INVARIANT_1A = frozenset(
    ("inning", "outing", "canning", "herring", "earring", "proceed", "exceed", "succeed")
)

_STEP2 = (
    ("ational", "ate"),
    ("tional", "tion"),
    ("enci", "ence"),
    ("anci", "ance"),
    ("abli", "able"),
    ("entli", "ent"),
    ("izer", "ize"),
    ("ization", "ize"),
    ("ation", "ate"),
    ("ator", "ate"),
    ("alism", "al"),
    ("aliti", "al"),
    ("alli", "al"),
    ("fulness", "ful"),
    ("ousli", "ous"),
    ("ousness", "ous"),
    ("iveness", "ive"),
    ("iviti", "ive"),
    ("biliti", "ble"),
    ("bli", "ble"),
    ("ogi", "og"),
    ("fulli", "ful"),
    ("lessli", "less"),
    ("li", ""),
)
_STEP3 = (
    ("ational", "ate"),
    ("tional", "tion"),
    ("alize", "al"),
    ("icate", "ic"),
    ("iciti", "ic"),
    ("ical", "ic"),
    ("ful", ""),
    ("ness", ""),
    ("ative", ""),
)
_STEP2_TO = dict(_STEP2)
_STEP2_SUFFIXES = tuple(_STEP2_TO)
_STEP3_SUFFIXES = tuple(s for s, _ in _STEP3)
_STEP3_TO = dict(_STEP3)
_STEP4 = (
    "al",
    "ance",
    "ence",
    "er",
    "ic",
    "able",
    "ible",
    "ant",
    "ement",
    "ment",
    "ent",
    "ism",
    "ate",
    "iti",
    "ous",
    "ive",
    "ize",
    "ion",
)


def _is_vowel(word: str, i: int) -> bool:
    return word[i] in _VOWELS


def _region_after(word: str, start: int) -> int:
    """Index after the first non-vowel that follows a vowel, from ``start`` (or ``len``)."""
    for i in range(start + 1, len(word)):
        if not _is_vowel(word, i) and _is_vowel(word, i - 1):
            return i + 1
    return len(word)


def _regions(word: str) -> tuple[int, int]:
    for prefix in ("gener", "commun", "arsen"):
        if word.startswith(prefix):
            r1 = len(prefix)
            break
    else:
        r1 = _region_after(word, 0)
    return r1, _region_after(word, r1) if r1 < len(word) else len(word)


def _short_syllable_at_end(word: str) -> bool:
    """Ends in a short syllable: non-vowel, vowel, non-vowel (not w, x, Y); or vowel, non-vowel."""
    n = len(word)
    if n >= 3:
        return (
            not _is_vowel(word, n - 3)
            and _is_vowel(word, n - 2)
            and not _is_vowel(word, n - 1)
            and word[-1] not in "wxY"
        )
    return n == 2 and _is_vowel(word, 0) and not _is_vowel(word, 1)


def _longest(word: str, suffixes: tuple[str, ...]) -> str | None:
    best: str | None = None
    for suffix in suffixes:
        if word.endswith(suffix) and (best is None or len(suffix) > len(best)):
            best = suffix
    return best


def _step1a(word: str) -> str:
    if word.endswith("sses"):
        return word[:-2]
    if word.endswith(("ied", "ies")):
        return word[:-2] if len(word) > 4 else word[:-1]
    if word.endswith(("us", "ss")):
        return word
    if word.endswith("s") and any(_is_vowel(word, i) for i in range(len(word) - 2)):
        return word[:-1]
    return word


def _step1b(word: str, r1: int) -> str:
    suffix = _longest(word, ("eed", "eedly", "ed", "edly", "ing", "ingly"))
    if suffix is None:
        return word
    if suffix in ("eed", "eedly"):
        if len(word) - len(suffix) >= r1:
            return word[: -len(suffix)] + "ee"
        return word
    base = word[: -len(suffix)]
    if not any(_is_vowel(base, i) for i in range(len(base))):
        return word
    if base.endswith(("at", "bl", "iz")):
        return base + "e"
    if base.endswith(_DOUBLES):
        return base[:-1]
    if r1 >= len(base) and _short_syllable_at_end(base):
        return base + "e"
    return base


def _step1c(word: str) -> str:
    if len(word) > 2 and word[-1] in "yY" and not _is_vowel(word, len(word) - 2):
        return word[:-1] + "i"
    return word


def _step2(word: str, r1: int) -> str:
    suffix = _longest(word, _STEP2_SUFFIXES)
    if suffix is None or len(word) - len(suffix) < r1:
        return word
    base = word[: -len(suffix)]
    if suffix == "ogi":
        return base + "og" if base.endswith("l") else word
    if suffix == "li":
        return base if base and base[-1] in _LI_ENDINGS else word
    return base + _STEP2_TO[suffix]


def _step3(word: str, r1: int, r2: int) -> str:
    suffix = _longest(word, _STEP3_SUFFIXES)
    if suffix is None or len(word) - len(suffix) < r1:
        return word
    if suffix == "ative" and len(word) - len(suffix) < r2:
        return word
    return word[: -len(suffix)] + _STEP3_TO[suffix]


def _step4(word: str, r2: int) -> str:
    suffix = _longest(word, _STEP4)
    if suffix is None or len(word) - len(suffix) < r2:
        return word
    base = word[: -len(suffix)]
    if suffix == "ion" and not base.endswith(("s", "t")):
        return word
    return base


def _step5(word: str, r1: int, r2: int) -> str:
    n = len(word)
    if word.endswith("e"):
        if n - 1 >= r2 or (n - 1 >= r1 and not _short_syllable_at_end(word[:-1])):
            return word[:-1]
    elif word.endswith("ll") and n - 1 >= r2:
        return word[:-1]
    return word


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """The Porter2 stem of a lower-case word ("renewal", "renewed" -> "renew").

    Words of one or two letters, and words that are not ASCII letters only,
    are returned unchanged.

    Args:
        word: one case-folded word.

    Returns:
        Its stem.
    """
    if len(word) <= 2 or not word.isascii() or not word.isalpha():
        return word
    if word in _EXCEPTIONS:
        return _EXCEPTIONS[word]
    # y at the start or after a vowel is a consonant: mark it Y
    chars = list(word)
    for i, ch in enumerate(chars):
        if ch == "y" and (i == 0 or chars[i - 1] in _VOWELS):
            chars[i] = "Y"
    w = "".join(chars)
    r1, r2 = _regions(w)
    w = _step1a(w)
    if w in _INVARIANT_1A:
        return w
    w = _step1b(w, r1)
    w = _step1c(w)
    w = _step2(w, r1)
    w = _step3(w, r1, r2)
    w = _step4(w, r2)
    w = _step5(w, r1, r2)
    return w.replace("Y", "y")
