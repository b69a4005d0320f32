"""What the trust app tells the apps above it, without importing them.

``agent_switched_off`` is sent (``agent_id=``) once the transaction that switched an
agent off has committed; what an agent holds between its calls (a browser profile) is
ended by its receivers.
"""

from __future__ import annotations

from typing import Final

from django.dispatch import Signal

agent_switched_off: Final = Signal()
