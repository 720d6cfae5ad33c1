"""The attribute-blind table's shape below :data:`~dpfair.classification.blind_postprocessing.SMALL_SAMPLE_ROWS` rows.

With two groups, the attribute private and fewer than ``SMALL_SAMPLE_ROWS`` (public) training rows, the held-out
violation is the sampling's, not the noise's (the exact, epsilon = inf, fit's held-out violation is 0.153 on
the fairness suite's 1,000-row task, 667 training rows, on its own plan's 16 x 4 table, at a training violation of
0.045), and the robust margins' sampling term
(``SMALL_SAMPLE_FACTOR`` times the usual) is what keeps it down.  The noise plan
(:func:`~dpfair.classification.blind_table.plan_cells`) then asks for a coarser table than the sampling term needs:
5 score bins x 3 membership cells at ``epsilon = 1``.  Where it plans fewer than :data:`SMALL_SAMPLE_CELLS` cells the
table has at least :data:`SMALL_SAMPLE_CELLS`'s 4 membership cells and 9 score bins (at a larger epsilon the plan's
number of cells, if larger, is kept, over 4 membership cells or more).  Only public sizes
are read: privacy is unchanged (the release's noise scale does not depend on the number of cells).
"""

from __future__ import annotations

from typing import Any

from dpfair.privacy.relations import REPLACE

__all__ = ["OTHER_SMALL_SAMPLE_FACTOR", "SMALL_SAMPLE_CELLS", "small_sample_cells", "small_sample_shape_applies"]

#: The sampling term's multiple below ``SMALL_SAMPLE_ROWS`` rows where :data:`SMALL_SAMPLE_CELLS` is not the table
#: (three groups or more, whole rows private, or score bins or membership cells given by the caller): the factor
#: measured on the noise plan's 5 x 3 table (39 of 60 draws, against 28 for 5; ``SMALL_SAMPLE_FACTOR`` is 5 where
#: :data:`SMALL_SAMPLE_CELLS` is used, which was measured with it).
OTHER_SMALL_SAMPLE_FACTOR = 4.0

#: The table ``(score bins, membership cells)`` below ``SMALL_SAMPLE_ROWS`` rows with two groups, where the noise plan
#: has fewer cells.  On the fairness suite's 1,000-row task (``DPFairClassifier`` blind, attribute private, ``epsilon
#: = 1``; 5 splits x 60 seeded draws, paired; draws whose 5-split medians meet u >= .5 and EO <= .10, and the median
#: over draws of the median error / held-out violation), with ``SMALL_SAMPLE_FACTOR`` 5: 9 x 4 49 of 60 (0.379 /
#: 0.083), 46 and 49 of 60 on 120 fresh draws, against the plan's 5 x 3 with factor 4, 39, 44 and 36 of 60 (0.384 /
#: 0.082): 144 of 180 against 119 (u misses 42 to 10, violation misses 21 to 26; medians 0.383 / 0.078 to 0.376 /
#: 0.083).  Tried, not kept: 8 x 4 46 of 60 (0.382 / 0.077), 10 x 4 35 (0.374 / 0.090), 12 x 4 40 (0.369 / 0.093), 9 x
#: 4 with factor 6 48 (0.384 / 0.075); factor 5.5, or ``gamma`` 0.042, 97 of the first 120 (95 with 5 and 0.045:
#: misses traded from the utility share to the violation); the shape alone, factor 4: 5 x 4 38 (0.380 / 0.079), 7 x 3
#: 42, 9 x 3 38, 6 x 3 29, 4 x 3 13; 2 membership cells 8 (0.404 / 0.047), 1 0 (0.419 / 0.039).  Giving the table more
#: of epsilon (``membership_share`` 0.1 with 9 x 4 and factor 5) did about as well: 149 of 180 against 144.  32
#: redrawn copies instead of 16 (5 x 3): 38 of 60.  Both releases exact (the margins kept): 0 of 20 (0.399 / 0.080):
#: the utility is lost to the margins the sampling needs, not to the noise.  There the rule runs at a low positive
#: rate (training true- / false-positive rate 0.24 / 0.075, the range of ``p`` below 0.5 in half of the fits; 0.29 /
#: 0.098 and a quarter with 9 x 4), held by the smaller group's false-positive rate (about 60 training negatives; the
#: largest robust load in 30 of 40 fits, the larger group's true-positive rate in the rest).  The factor 5 only on
#: (group, label) rates of fewer than 150 released rows (1 elsewhere): 48 of 60 (0.375 / 0.087).
SMALL_SAMPLE_CELLS = (9, 4)


def small_sample_cells(planned: tuple[int, int]) -> tuple[int, int]:
    """The table's shape below ``SMALL_SAMPLE_ROWS`` rows with two groups: :data:`SMALL_SAMPLE_CELLS` or a finer plan.

    Parameters
    ----------
    planned : tuple of int
        ``(score bins, membership cells)`` of :func:`~dpfair.classification.blind_table.plan_cells` (public sizes).

    Returns
    -------
    tuple of int
        At least :data:`SMALL_SAMPLE_CELLS`'s 4 membership cells, and at least 9 score bins or as many as keep
        ``planned``'s number of cells (a finer plan, at a larger epsilon, stays as fine).
    """
    scores, membership = planned
    membership = max(int(membership), SMALL_SAMPLE_CELLS[1])  # membership cells matter most (2 cells: 8 of 60)
    return max(int(scores) * int(planned[1]) // membership, SMALL_SAMPLE_CELLS[0]), membership


def small_sample_shape_applies(options: Any, n_rows: int, n_groups: int, small_rows: int) -> bool:
    """Whether the table is :func:`small_sample_cells`'s: attribute private, two groups, below ``small_rows`` rows.

    There the robust margins' sampling term is ``SMALL_SAMPLE_FACTOR`` (5) times the usual, the factor it was measured
    with; on any other table below ``small_rows`` rows :data:`OTHER_SMALL_SAMPLE_FACTOR` (4).  Reads public facts
    only: the relation, the caller's ``score_bins`` / ``membership_bins`` (given: the plan and the caller's choice
    are kept), the number of declared groups and of training rows.

    Parameters
    ----------
    options : BlindOptions
        The post-processor's validated parameters.
    n_rows : int
        Training rows (public).
    n_groups : int
        Declared groups.
    small_rows : int
        ``SMALL_SAMPLE_ROWS``.

    Returns
    -------
    bool
    """
    shape_given = options.score_bins != "auto" or options.membership_bins != "auto"
    return options.relation != REPLACE and not shape_given and n_groups == 2 and n_rows < small_rows
