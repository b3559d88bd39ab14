"""One name per slot state (ledger.claims.SlotState): the words shown, the row's spellings."""

from __future__ import annotations

import pytest

from autoretto.decisions import SLOT_STATES, slot_state
from autoretto.ledger.claims import SlotState


def test_every_stored_spelling_names_one_state() -> None:
    stored = {state: state.stored for state in SlotState if state in _RECORDED}
    assert stored == {
        SlotState.DUE: "claimed",
        SlotState.POSTED: "filled",
        SlotState.WAITING: "waiting",
        SlotState.FAILED: "failed",
        SlotState.MISSED: "missed",
        SlotState.EMPTY: "empty",
    }
    for state, text in stored.items():
        assert SlotState.from_stored(text) is state
    assert SlotState.from_stored(None) is None
    assert SlotState.from_stored("unknown") is None


_RECORDED = {
    SlotState.DUE,
    SlotState.POSTED,
    SlotState.WAITING,
    SlotState.FAILED,
    SlotState.MISSED,
    SlotState.EMPTY,
}


def test_a_state_no_row_records_has_no_stored_spelling() -> None:
    for state in set(SlotState) - _RECORDED:
        with pytest.raises(ValueError):
            _ = state.stored


def test_shown_words_are_the_states_values() -> None:
    assert list(SLOT_STATES) == [state.value for state in SlotState]
    assert SLOT_STATES["refused_by_limit"] == "refused by a limit"
    assert SLOT_STATES["unseen"] == "before this schedule"
    assert slot_state(["nothing_ready", "posted"]) is SlotState.POSTED
    assert slot_state(["missed", "refused_by_limit"]) is SlotState.REFUSED_BY_LIMIT
    assert slot_state(["busy"]) is SlotState.WAITING  # an older version's outcome
    assert slot_state([]) is None
