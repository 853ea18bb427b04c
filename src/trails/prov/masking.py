"""PII masking at the source: personal data is replaced before any quad is built.

Export redaction (``[[audit.redact]]``) hides values on the way out; the store
still holds them. Masking rules act earlier: the ``QuadBuilder`` passes every
text it is about to record (content values, goals, answers, error messages,
labels ...) through the recorder's ``Masking``, so the raw value never reaches
the store, its files or its seals. Digests are computed from the masked text.
What was masked is recorded next to the value, as a ``trails:Masking`` entity
(which rule, which property, how many matches), so an auditor knows content
was masked and by which rule, without seeing it.

A rule is a regular expression (optionally with a check that each match must
pass, such as a Luhn or IBAN checksum) or a callable ``text -> text`` or
``text -> (text, matches)``. Named rules:

- ``email``: e-mail addresses;
- ``phone``: phone numbers in international form, and national numbers of
  ``[prov.masking] phone_region`` (found by the ``phonenumbers`` library);
- ``iban``: IBANs whose checksum holds (``python-stdnum``);
- ``card``: payment card numbers (13-19 digits) that pass the Luhn check;
- ``api_key``: API keys and tokens by their well-known prefixes (``sk-``,
  ``sk-ant-``, ``AKIA``, ``ghp_``/``gho_``/``ghs_``, ``github_pat_``,
  ``xox?-``, ``AIza``, ``glpat-``) and ``Bearer`` tokens.

Configuration (``trails.toml``)::

    [prov.masking]
    rules = ["email", "phone", "iban", "card", "api_key"]
    phone_region = "DE"                 # national numbers of this region too
    [[prov.masking.patterns]]
    name = "employee-id"
    regex = "EMP-[0-9]{6}"
    [[prov.masking.functions]]
    name = "names"
    function = "my_package.pii:mask_names"   # text -> text, or (text, matches)

Identifiers, digests and keys the recorder writes (hashes, signatures, seal
fields) are never masked.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from trails.errors import ConfigError

__all__ = ["NAMED_RULES", "MaskFunction", "MaskRule", "Masking"]

MaskFunction = Callable[[str], "str | tuple[str, int]"]
"""A callable rule: returns the masked text, or ``(masked text, number of matches)``."""


@dataclass(frozen=True)
class MaskRule:
    """One masking rule: a pattern (with an optional check per match) or a function."""

    name: str
    pattern: re.Pattern[str] | None = None
    function: MaskFunction | None = None
    check: Callable[[str], bool] | None = None
    replacement: str | None = None

    def __post_init__(self) -> None:
        if not self.name or not re.fullmatch(r"[A-Za-z0-9_.-]+", self.name):
            raise ConfigError(
                f"a masking rule needs a name of letters, digits, _ . -: {self.name!r}"
            )
        if (self.pattern is None) == (self.function is None):
            raise ConfigError(f"masking rule {self.name!r}: give a pattern or a function")

    @property
    def mask(self) -> str:
        """What a match is replaced by (default ``[masked:NAME]``)."""
        return self.replacement if self.replacement is not None else f"[masked:{self.name}]"

    @classmethod
    def regex(
        cls,
        name: str,
        pattern: str | re.Pattern[str],
        *,
        replacement: str | None = None,
        check: Callable[[str], bool] | None = None,
    ) -> MaskRule:
        """A rule that masks every match of ``pattern`` (that passes ``check``)."""
        try:
            compiled = re.compile(pattern) if isinstance(pattern, str) else pattern
        except re.error as exc:
            raise ConfigError(f"masking rule {name!r}: invalid regular expression: {exc}") from exc
        return cls(name, pattern=compiled, check=check, replacement=replacement)

    @classmethod
    def callable(cls, name: str, function: MaskFunction) -> MaskRule:
        """A rule computed by ``function``."""
        return cls(name, function=function)

    def apply(self, text: str) -> tuple[str, int]:
        """``(masked text, matches)``."""
        if self.function is not None:
            result = self.function(text)
            if isinstance(result, tuple):
                masked, count = result
                return str(masked), int(count)
            masked = str(result)
            return masked, int(masked != text)
        assert self.pattern is not None
        count = 0

        def replace(match: re.Match[str]) -> str:
            nonlocal count
            if self.check is not None and not self.check(match.group(0)):
                return match.group(0)
            count += 1
            return self.mask

        masked = self.pattern.sub(replace, text)
        return masked, count


# -- named rules ------------------------------------------------------------------


def _digits(text: str) -> str:
    return re.sub(r"\D", "", text)


def _luhn(text: str) -> bool:
    from stdnum import luhn

    digits = _digits(text)
    return 13 <= len(digits) <= 19 and bool(luhn.is_valid(digits))


def _iban(text: str) -> bool:
    from stdnum import iban

    return bool(iban.is_valid(text))


# A cheap test for "could hold a phone number": a run of at least 7 digits with phone
# punctuation, not glued to letters or hyphens (hex digests, UUIDs and ISO times are not).
_PHONE_CANDIDATE = re.compile(r"(?<![\w-])\+?\(?\d(?:[\s()./-]{0,2}\d){6,}(?![\w-])")


def _phone_rule(region: str | None) -> MaskRule:
    def mask_phones(text: str) -> tuple[str, int]:
        if not _PHONE_CANDIDATE.search(text):
            return text, 0
        import phonenumbers

        spans = [
            (m.start, m.end)
            for m in phonenumbers.PhoneNumberMatcher(
                text, region, leniency=phonenumbers.Leniency.VALID
            )
        ]
        for start, end in reversed(spans):
            text = text[:start] + "[masked:phone]" + text[end:]
        return text, len(spans)

    return MaskRule.callable("phone", mask_phones)


_EMAIL = r"(?<![\w.+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}(?![\w-])"
_CARD = r"(?<![\w-])\d(?:[ -]?\d){12,18}(?![\w-])"
_IBAN = r"(?<![\w])[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}(?![\w])"
_API_KEY = (
    r"(?<![\w-])(?:sk-(?:ant-)?[A-Za-z0-9_-]{16,}|AKIA[0-9A-Z]{16}|gh[pousr]_[A-Za-z0-9]{30,}"
    r"|github_pat_[A-Za-z0-9_]{30,}|xox[abposr]-[A-Za-z0-9-]{10,}|AIza[0-9A-Za-z_-]{35}"
    r"|glpat-[A-Za-z0-9_-]{20,})(?![\w-])"
    r"|(?<=Bearer )[A-Za-z0-9._~+/-]{16,}=*"
)


def _named(region: str | None) -> dict[str, MaskRule]:
    return {
        "email": MaskRule.regex("email", _EMAIL),
        "phone": _phone_rule(region),
        "iban": MaskRule.regex("iban", _IBAN, check=_iban),
        "card": MaskRule.regex("card", _CARD, check=_luhn),
        "api_key": MaskRule.regex("api_key", _API_KEY),
    }


NAMED_RULES = tuple(_named(None))
"""The names of the built-in rules."""


@dataclass(frozen=True)
class Masking:
    """An ordered set of rules; ``mask`` applies each in turn.

    API keys and cards go before phones, so a long digit run is named for what it is.
    """

    rules: tuple[MaskRule, ...] = field(default_factory=tuple)

    def __bool__(self) -> bool:
        return bool(self.rules)

    @classmethod
    def named(
        cls, *names: str, phone_region: str | None = None, extra: Iterable[MaskRule] = ()
    ) -> Masking:
        """The named rules (see ``NAMED_RULES``), then ``extra``.

        Raises:
            ConfigError: an unknown name.
        """
        known = _named(phone_region)
        unknown = [n for n in names if n not in known]
        if unknown:
            raise ConfigError(
                f"unknown masking rule(s) {', '.join(unknown)}; named rules: "
                f"{', '.join(NAMED_RULES)}"
            )
        order = ["api_key", "iban", "card", "email", "phone"]
        chosen = [known[n] for n in order if n in names]
        return cls(tuple(chosen) + tuple(extra))

    @classmethod
    def from_settings(cls, settings: Any) -> Masking:
        """The rules of ``[prov.masking]`` (none when the table is absent).

        Raises:
            ConfigError: the table is malformed, a pattern does not compile, or a
                function cannot be imported.
        """
        table = settings.section("prov").get("masking") or {}
        if not isinstance(table, dict):
            raise ConfigError("[prov.masking] must be a table")
        names = table.get("rules", [])
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise ConfigError("[prov.masking] rules must be a list of rule names")
        region = table.get("phone_region")
        if region is not None and not isinstance(region, str):
            raise ConfigError('[prov.masking] phone_region must be a region code such as "DE"')
        extra: list[MaskRule] = []
        for item in _tables(table, "patterns"):
            regex = item.get("regex")
            if not isinstance(regex, str):
                raise ConfigError('[[prov.masking.patterns]] needs regex = "..."')
            replacement = item.get("replacement")
            extra.append(
                MaskRule.regex(
                    str(item.get("name", "")),
                    regex,
                    replacement=replacement if isinstance(replacement, str) else None,
                )
            )
        for item in _tables(table, "functions"):
            extra.append(
                MaskRule.callable(str(item.get("name", "")), _import(item.get("function")))
            )
        return cls.named(*names, phone_region=region, extra=extra)

    def mask(self, text: str) -> tuple[str, list[tuple[str, int]]]:
        """``(masked text, [(rule name, matches), ...])`` for the rules that matched."""
        found: list[tuple[str, int]] = []
        for rule in self.rules:
            text, count = rule.apply(text)
            if count:
                found.append((rule.name, count))
        return text, found


def _tables(table: dict[str, Any], key: str) -> list[dict[str, Any]]:
    items = table.get(key, [])
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        raise ConfigError(f"[[prov.masking.{key}]] must be tables")
    return items


def _import(path: Any) -> MaskFunction:
    if not isinstance(path, str) or ":" not in path:
        raise ConfigError('[[prov.masking.functions]] needs function = "module:function"')
    module, _, name = path.partition(":")
    try:
        found = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"cannot load the masking function {path!r}: {exc}") from exc
    if not callable(found):
        raise ConfigError(f"the masking function {path!r} is not callable")
    return found  # type: ignore[no-any-return]
