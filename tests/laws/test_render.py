"""Tables, results and the end-to-end run (analysis.laws.render)."""

from analysis.laws.fit import fit_law
from analysis.laws.render import fits_frame, markdown_table, run_laws
from analysis.laws.sweep import default_config, make_config, run_sweep


def test_tables_report_the_harmonic_count(harmonic_table):
    (fit,) = fit_law(harmonic_table, family="spherical", n_boot=20)
    assert "inside 8/8 brackets" in markdown_table([fit])
    frame = fits_frame([fit])
    assert frame.loc[0, "harmonic_inside"] == 8
    # the ball has no such count
    (ball,) = fit_law(harmonic_table, family="ball", n_boot=20)
    assert "harmonic_slope" not in fits_frame([ball])


def test_small_real_sweep_end_to_end(tmp_path):
    # A real sweep (engine brackets on real spherical matrices), small enough for a test.
    cfg = make_config(
        default_config("spherical"),
        dims=[2],
        betas=[1, 4, 16],
        n=48,
        eps=[0.2],
        seeds=[0, 1],
        effort="fast",
    )
    res = run_laws(cfg, out=tmp_path, progress=False, n_boot=30, workers=2)
    table = run_sweep(cfg, out=tmp_path, progress=False)
    assert table["cached"].all() and len(table) == 6
    assert (table["lower"] >= 1).all() and (table["lower"] <= table["upper"]).all()
    assert (table["upper"] <= 48).all()
    # distinct seeds draw distinct clouds; each (beta, seed) its own matrix seed
    assert table["matrix_seed"].nunique() == 6
    (fit,) = res["fits"]
    # the midpoint slope is the LS slope of points inside the brackets: in the identified set
    assert fit["slope_set"][0] <= fit["slope_mid"] <= fit["slope_set"][1]
    assert fit["slope"] > 0  # the rank grows with beta on this sweep
    assert res["timing"]["matrices"] == 6
    assert (tmp_path / "fits.md").read_text().count("\n") == 3
    for name in ("brackets.csv", "fits.csv", "local_slopes.csv", "results.json"):
        assert (tmp_path / name).is_file(), name
