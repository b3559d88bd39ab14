"""Claims: who holds a slot, a channel's making, a waiting slot's platform, a post being sent."""

from __future__ import annotations

#: The condition a take-over's UPDATE adds (parameters :holder and :beat): the holder's beat
#: is still the one seen when it was judged gone (a run with no row has beat -1). See
#: liveness.py for the rule.
BEAT_UNCHANGED = "COALESCE((SELECT beat FROM runs WHERE id = :holder), -1) = :beat"
