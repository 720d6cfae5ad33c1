"""Private base models: linear and logistic regression under the dpfair estimator contract.

* :class:`DPLinearRegression`: (ridge) least squares from the noisy sufficient statistics ``Z^T Z`` and
  ``Z^T y`` (Gaussian or Laplace mechanism), with declared bounds on ``||x||`` (or each feature's range)
  and ``|y|``, a PSD repair of the noisy Gram matrix, a ridge penalty tied to the noise
  (``alpha="auto"``) and a :class:`NoiseDominatesWarning` when the noise outweighs the signal.
* :class:`DPLogisticRegression`: binary logistic regression by objective perturbation (Chaudhuri,
  Monteleoni & Sarwate 2011, Algorithm 2), with a declared bound on ``||x||`` and any two class labels.

Both protect every training row ``(x, y)``, take ``epsilon``, ``budget`` and ``random_state`` and
report ``privacy_spent_``; at ``epsilon = inf`` they are scikit-learn's ``Ridge`` and (intercept
penalised) ``LogisticRegression``.  Wrapped in a dpfair post-processor with ``prefit=False``, they
make the whole fitted object private end to end: the post-processor's ``privacy_spent_`` adds the
base model's.
"""

from dpfair.linear_model._linear import DPLinearRegression, NoiseDominatesWarning
from dpfair.linear_model._logistic import DPLogisticRegression

__all__ = ["DPLinearRegression", "DPLogisticRegression", "NoiseDominatesWarning"]
