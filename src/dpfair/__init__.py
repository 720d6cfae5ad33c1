"""dpfair: decisions about people that are both fair and differentially private.

The layers of the package, each unit's role and what it may import are declared once, in ``dpfair._layout``;
the documentation's architecture page draws them.
"""

from dpfair import _layout
from dpfair._version import __version__

if __doc__ is not None:  # (None under python -OO)
    __doc__ += "\n" + _layout.subpackage_summary()

__all__ = ["__version__"]
