"""Reading back the tables experiments.results.write_csvs wrote."""
import pandas as pd


def read_csv(path):
    """A table write_csvs wrote, its per-example bit columns (`*correct*`: train.correct_bits' hex) read as text:
    a short run's bits can be all digits ("0000000000" for 40 examples), which a number would lose."""
    header = pd.read_csv(path, nrows=0).columns
    return pd.read_csv(path, dtype={c: str for c in header if "correct" in c})
