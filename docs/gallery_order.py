"""The order of the example gallery: from a first pass to specific tasks."""

EXAMPLES = [
    "plot_progressive_validation.py",
    "plot_sparsity_l1.py",
    "plot_fobos_rda_ftrl.py",
    "plot_streaming_file.py",
    "plot_hashing_grid_search.py",
    "plot_click_crosses.py",
    "plot_multiclass_dna.py",
    "plot_regression_bike_sharing.py",
    "plot_ogd_least_squares.py",
    "plot_fm_ratings.py",
    "plot_fm_click_interaction.py",
    "plot_torch_wide_and_deep.py",
]


class ExampleOrder:
    """Sort key for sphinx-gallery: the listed examples first, in that order."""

    def __init__(self, src_dir):
        self.src_dir = src_dir

    def __call__(self, filename):
        if filename in EXAMPLES:
            return (EXAMPLES.index(filename), filename)
        return (len(EXAMPLES), filename)
