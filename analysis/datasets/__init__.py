"""Small made-up inputs for the documentation, like :mod:`sklearn.datasets`.

The ``Examples`` sections of the package start from these fixtures, so each example states
only what it shows. They are toys (nothing here is a result), and no stage imports them:
the package sits on top of every stage, as :mod:`analysis.study` does.

=====================================  ===================================================
Attention matrices (brackets)          :func:`example_head`, :func:`example_matrix_input`,
                                       :func:`example_bracket_result`
Tidy tables of cells (compare, study)  :func:`example_comparison_table`,
                                       :data:`EXAMPLE_MODELS`, :func:`example_comparison`,
                                       :func:`example_study_table`,
                                       :func:`example_head_table`,
                                       :func:`example_intervals`,
                                       :func:`example_covariate_table`
Designs and power inputs (prereg)      :func:`write_example_design`,
                                       :data:`EXAMPLE_HELD_OUT`,
                                       :func:`open_example_study`, :func:`example_sizes`,
                                       :func:`example_widths`, :func:`example_validation`
Study results (report) and an atlas    :func:`example_report_design`,
                                       :func:`example_study_results`,
                                       :func:`example_checkpoint_results`,
                                       :func:`example_table_results`,
                                       :func:`example_atlas`
=====================================  ===================================================
"""

from analysis.datasets._designs import (
    EXAMPLE_HELD_OUT,
    example_sizes,
    example_validation,
    example_widths,
    open_example_study,
    write_example_design,
)
from analysis.datasets._matrices import example_bracket_result, example_head, example_matrix_input
from analysis.datasets._results import (
    example_atlas,
    example_checkpoint_results,
    example_report_design,
    example_study_results,
    example_table_results,
)
from analysis.datasets._tables import (
    EXAMPLE_MODELS,
    example_comparison,
    example_comparison_table,
    example_covariate_table,
    example_head_table,
    example_intervals,
    example_study_table,
)

__all__ = [
    "EXAMPLE_HELD_OUT",
    "EXAMPLE_MODELS",
    "example_atlas",
    "example_bracket_result",
    "example_checkpoint_results",
    "example_comparison",
    "example_comparison_table",
    "example_covariate_table",
    "example_head",
    "example_head_table",
    "example_intervals",
    "example_matrix_input",
    "example_report_design",
    "example_sizes",
    "example_study_results",
    "example_study_table",
    "example_table_results",
    "example_validation",
    "example_widths",
    "open_example_study",
    "write_example_design",
]
