"""Text no record can hold (an unpaired surrogate) in the compliance API is a UserError.

``erase``, ``place_hold``, ``release_holds`` and retention's ``apply`` take who acts and
why from their caller; a lone surrogate there (from ``surrogateescape`` decoding, say)
is refused with an error naming the field, before anything is written, instead of a
bare ``UnicodeEncodeError`` or a ``StoreError`` from deep inside the write.
"""

from __future__ import annotations

import pytest

from trails.compliance.erasure import erase
from trails.compliance.holds import place_hold, release_holds
from trails.compliance.retention import RetentionPolicy, apply
from trails.errors import UserError
from trails.evidence.seal import install_sealer
from trails.kernel import Context
from trails.prov import Recorder
from trails.store import Store

BAD = "did:example:\ud800dpo"


@pytest.mark.parametrize("field", ["by", "reason"])
def test_erase_and_holds_name_the_field_that_cannot_be_recorded(store: Store, field: str) -> None:
    recorder = Recorder(store)
    install_sealer(recorder)
    with Context.open("did:example:jane", recorder=recorder) as ctx:
        session = str(ctx.session)
    before = store.dump(format="nquads")
    kw = {"by": "did:example:dpo", "reason": "request 1", field: BAD}
    with pytest.raises(UserError, match=rf"{field}.*unpaired surrogate"):
        erase(recorder, principal="did:example:jane", **kw)
    with pytest.raises(UserError, match=rf"{field}.*unpaired surrogate"):
        place_hold(recorder, session, **kw)
    with pytest.raises(UserError, match=rf"{field}.*unpaired surrogate"):
        release_holds(recorder, session, **kw)
    with pytest.raises(UserError, match=rf"{field}.*unpaired surrogate"):
        apply(recorder, RetentionPolicy(), **kw)
    assert store.dump(format="nquads") == before  # nothing was written


def test_an_unencodable_principal_to_erase_is_named(store: Store) -> None:
    recorder = Recorder(store)
    with pytest.raises(UserError, match=r"principal.*unpaired surrogate"):
        erase(recorder, principal=BAD, reason="r", by="did:example:dpo")
