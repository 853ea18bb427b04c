"""PII masking at the source: rules applied before anything is written, and the fact recorded."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from pathlib import Path

import pytest

import trails.memory as memory
from trails.config import load_settings
from trails.errors import ConfigError
from trails.evidence import install_sealer, verify
from trails.kernel import Context, capability, invoke
from trails.prov import LLMCompleted, PlanRunStarted, Recorder
from trails.prov.masking import NAMED_RULES, Masking, MaskRule
from trails.store import Store, open_store, set_default_store

EMAIL = "jane.doe@example.org"
PHONE = "+44 20 7946 0958"
IBAN = "DE89 3704 0044 0532 0130 00"
CARD = "4111 1111 1111 1111"
API_KEY = "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUv"
RAW = (EMAIL, PHONE, IBAN, CARD, API_KEY)


def test_named_rules_mask_what_they_name_and_leave_the_rest() -> None:
    masking = Masking.named(*NAMED_RULES)
    text = (
        f"mail {EMAIL}, call {PHONE}, pay {IBAN} by card {CARD} with key {API_KEY}; "
        "order 1234 5678 9012 3456 on 2025-03-01, hash 3f2a9c1e4b5d6f7a8b9c0d1e2f3a4b5c, "
        "account DE00 1234 5678 9012 3456 78"
    )
    masked, found = masking.mask(text)
    for raw in RAW:
        assert raw not in masked
    assert dict(found) == {"email": 1, "phone": 1, "iban": 1, "card": 1, "api_key": 1}
    # not a Luhn number, a date, a hex digest, an IBAN whose checksum fails: left alone
    for kept in (
        "1234 5678 9012 3456",
        "2025-03-01",
        "3f2a9c1e4b5d6f7a8b9c0d1e2f3a4b5c",
        "DE00 1234 5678 9012 3456 78",
    ):
        assert kept in masked
    assert "[masked:email]" in masked and "[masked:card]" in masked


def test_regex_and_callable_rules() -> None:
    masking = Masking(
        (
            MaskRule.regex("employee-id", r"EMP-\d{6}", replacement="EMP-******"),
            MaskRule.callable("names", lambda t: t.replace("Jane", "[name]")),
            MaskRule.callable("counted", lambda t: (t.replace("x", "y"), t.count("x"))),
        )
    )
    masked, found = masking.mask("Jane is EMP-123456 and EMP-654321, xx")
    assert masked == "[name] is EMP-****** and EMP-******, yy"
    assert found == [("employee-id", 2), ("names", 1), ("counted", 2)]
    with pytest.raises(ConfigError, match="unknown masking rule"):
        Masking.named("email", "passport")
    with pytest.raises(ConfigError, match="invalid regular expression"):
        MaskRule.regex("bad", "(")


def test_masking_from_trails_toml(tmp_path: Path) -> None:
    (tmp_path / "trails.toml").write_text(
        '[prov.masking]\nrules = ["email", "phone"]\nphone_region = "DE"\n'
        '[[prov.masking.patterns]]\nname = "employee-id"\nregex = "EMP-[0-9]{6}"\n'
        '[[prov.masking.functions]]\nname = "upper"\nfunction = "string:capwords"\n'
    )
    settings = load_settings(environ={}, cwd=tmp_path)
    masking = Masking.from_settings(settings)
    assert [r.name for r in masking.rules] == ["email", "phone", "employee-id", "upper"]
    masked, found = masking.mask("call 030 1234567 or EMP-000001")
    assert "030 1234567" not in masked and "EMP-000001" not in masked
    assert ("phone", 1) in found and ("employee-id", 1) in found
    recorder = Recorder.from_settings(settings, store=open_store("memory:"))
    assert recorder.masking is not None
    assert [r.name for r in recorder.masking.rules] == [r.name for r in masking.rules]
    (tmp_path / "trails.toml").write_text('[prov.masking]\nrules = "email"\n')
    with pytest.raises(ConfigError, match="list of rule names"):
        Masking.from_settings(load_settings(environ={}, cwd=tmp_path))


def _record_a_session(recorder: Recorder) -> Context:
    @capability(id="lookup_customer", description="Find a customer")
    def lookup_customer(email: str) -> dict[str, str]:
        return {"email": email, "card": CARD, "phone": PHONE}

    @capability(id="notify", description="Notify a customer", side_effects=True)
    def notify(to: str) -> str:
        raise RuntimeError(f"no mailbox for {to}")

    ctx = Context.open("did:local:alice", recorder=recorder)
    run = recorder.minter.activity()
    recorder.record(
        PlanRunStarted(
            session=ctx.session,
            activity=run,
            parent=ctx.session,
            principal=ctx.principal,
            strategy="react",
            goal=f"refund {IBAN} for {EMAIL}",
            started=datetime.now(UTC),
        )
    )
    step = ctx.child(parent=run, step=0)
    invoke("lookup_customer", {"email": EMAIL}, ctx=step)
    with pytest.raises(Exception, match="no mailbox"):
        invoke("notify", {"to": EMAIL}, ctx=step)
    recorder.record(
        LLMCompleted(
            session=ctx.session,
            activity=recorder.minter.activity(),
            parent=run,
            principal=ctx.principal,
            provider="anthropic",
            model="claude-haiku",
            started=datetime.now(UTC),
            ended=datetime.now(UTC),
            messages=[{"role": "user", "content": f"my key is {API_KEY}"}],
            request_hash="h-1",
            text=f"Call {PHONE} or write to {EMAIL}.",
            input_tokens=10,
            output_tokens=5,
            usd=0.001,
            step=0,
        )
    )
    memory.learn(f"{EMAIL} prefers phone calls on {PHONE}", scope="shared", ctx=step)
    return ctx


def test_the_raw_values_never_reach_the_store_files(tmp_path: Path) -> None:
    where = tmp_path / "store"
    store = open_store(where)
    set_default_store(store)
    try:
        recorder = Recorder(store, masking=Masking.named(*NAMED_RULES))
        install_sealer(recorder)
        ctx = _record_a_session(recorder)
        ctx.close()
        report = verify(store)
        assert report.ok, report.findings

        # every text reached the store masked ...
        dump = (store.dump(format="nquads") or b"").decode()
        for raw in RAW:
            assert raw not in dump
        assert "[masked:email]" in dump and "[masked:iban]" in dump

        # ... and the fact of masking is recorded: which rule, which property, how many
        rows = store.query(
            """PREFIX trails: <https://w3id.org/trails/ns#>
            SELECT ?rule ?property (SUM(?n) AS ?matches) WHERE { GRAPH ?g {
              ?resource trails:masking ?m . ?m trails:maskingRule ?rule ;
              trails:maskedProperty ?property ; trails:matchCount ?n } }
            GROUP BY ?rule ?property"""
        )
        found = {(str(r["rule"].value), str(r["property"]).rsplit("#", 1)[-1]) for r in rows}  # type: ignore[union-attr]
        assert {
            ("iban", "goal"),
            ("email", "goal"),
            ("email", "value"),
            ("card", "value"),
            ("api_key", "value"),
            ("phone", "value"),
            ("email", "errorMessage"),
        } <= found

        # digests are of the masked text, so they reveal nothing about the raw value
        digests = store.query(
            "SELECT ?v ?h WHERE { GRAPH ?cg { ?e <http://www.w3.org/ns/prov#value> ?v } "
            "GRAPH ?g { ?e <https://w3id.org/trails/ns#sha256> ?h } }"
        )
        assert len(digests) > 3
        for row in digests:
            text = row["v"].value  # type: ignore[union-attr]
            assert row["h"].value == hashlib.sha256(text.encode()).hexdigest()  # type: ignore[union-attr]
    finally:
        set_default_store(None)
        store.close()

    # the files of the closed store: no raw value in any of them, under any encoding
    files = [p for p in where.rglob("*") if p.is_file()]
    assert files
    for path in files:
        data = path.read_bytes()
        for raw in RAW:
            for needle in (raw.encode(), raw.encode("utf-16-le"), raw.replace(" ", "").encode()):
                assert needle not in data, f"{raw!r} found in {path.name}"
    reopened = open_store(where)
    try:
        assert verify(reopened).ok
    finally:
        reopened.close()


def test_without_rules_nothing_is_masked(store: Store) -> None:
    recorder = Recorder(store)
    _record_a_session(recorder)
    dump = (store.dump(format="nquads") or b"").decode()
    assert EMAIL in dump and "trails#masking" not in dump
