"""dpfair: decisions about people that are both fair and differentially private.

Subpackages
-----------
privacy
    Budgets, accounting, noise sources, mechanisms, continual release and audits.
    The only place in dpfair that draws privacy noise.
fairness
    Fairness metrics shared by every experiment.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("dpfair")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0+unknown"

__all__ = ["__version__"]
