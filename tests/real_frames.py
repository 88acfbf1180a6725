"""The shipped LIBSVM datasets decoded back to the tables they were encoded from.

a9a is UCI Adult with each of its 14 attributes one-hot encoded, in the order
of ``adult.names``, each attribute's categories in the order ``adult.names``
lists them (the per-category counts of a9a's training file match UCI's, e.g.
workclass Private 22,696, sex Female 10,771 and Male 21,790). The six
continuous attributes were cut into bins, numbered here in increasing order
(checked on education-num, whose bins hold grades <= 8, 9, 10, 11-12, >= 13,
and hours-per-week, whose third bin is exactly 40). A missing value ("?" in
UCI) is a group of zeros.

dna is Statlog DNA: 60 positions, each base in three bits, A = 100, C = 010,
G = 001 and T = 000 (UCI's coding).
"""

import numpy as np
import pandas as pd
from sklearn.preprocessing import OneHotEncoder

BINS = ["bin1", "bin2", "bin3", "bin4", "bin5"]

# (attribute, categories in a9a's column order); 123 columns in all.
ADULT_ATTRIBUTES = [
    ("age", BINS),
    (
        "workclass",
        [
            "Private",
            "Self-emp-not-inc",
            "Self-emp-inc",
            "Federal-gov",
            "Local-gov",
            "State-gov",
            "Without-pay",
            "Never-worked",
        ],
    ),
    ("fnlwgt", BINS),
    (
        "education",
        [
            "Bachelors",
            "Some-college",
            "11th",
            "HS-grad",
            "Prof-school",
            "Assoc-acdm",
            "Assoc-voc",
            "9th",
            "7th-8th",
            "12th",
            "Masters",
            "1st-4th",
            "10th",
            "Doctorate",
            "5th-6th",
            "Preschool",
        ],
    ),
    ("education-num", BINS),
    (
        "marital-status",
        [
            "Married-civ-spouse",
            "Divorced",
            "Never-married",
            "Separated",
            "Widowed",
            "Married-spouse-absent",
            "Married-AF-spouse",
        ],
    ),
    (
        "occupation",
        [
            "Tech-support",
            "Craft-repair",
            "Other-service",
            "Sales",
            "Exec-managerial",
            "Prof-specialty",
            "Handlers-cleaners",
            "Machine-op-inspct",
            "Adm-clerical",
            "Farming-fishing",
            "Transport-moving",
            "Priv-house-serv",
            "Protective-serv",
            "Armed-Forces",
        ],
    ),
    (
        "relationship",
        [
            "Wife",
            "Own-child",
            "Husband",
            "Not-in-family",
            "Other-relative",
            "Unmarried",
        ],
    ),
    ("race", ["White", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other", "Black"]),
    ("sex", ["Female", "Male"]),
    ("capital-gain", ["zero", "positive"]),
    ("capital-loss", ["zero", "positive"]),
    ("hours-per-week", BINS),
    (
        "native-country",
        [
            "United-States",
            "Cambodia",
            "England",
            "Puerto-Rico",
            "Canada",
            "Germany",
            "Outlying-US(Guam-USVI-etc)",
            "India",
            "Japan",
            "Greece",
            "South",
            "China",
            "Cuba",
            "Iran",
            "Honduras",
            "Philippines",
            "Italy",
            "Poland",
            "Jamaica",
            "Vietnam",
            "Mexico",
            "Portugal",
            "Ireland",
            "France",
            "Dominican-Republic",
            "Laos",
            "Ecuador",
            "Taiwan",
            "Haiti",
            "Columbia",
            "Hungary",
            "Guatemala",
            "Nicaragua",
            "Scotland",
            "Thailand",
            "Yugoslavia",
            "El-Salvador",
            "Trinadad&Tobago",
            "Peru",
            "Hong",
            "Holand-Netherlands",
        ],
    ),
]
ADULT_COLUMNS = [name for name, _ in ADULT_ATTRIBUTES]
# The continuous attributes, as ordinal bin numbers in the mixed frame.
ADULT_BINNED = ["age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week"]
# a9a's 123 column names, "attribute=category".
A9A_FEATURE_NAMES = [
    f"{name}={category}" for name, categories in ADULT_ATTRIBUTES for category in categories
]
MISSING = "?"

DNA_BASES = "ACGT"


def a9a_frame(X):
    """Adult's 14 attributes as string columns; "?" where a9a has no bit set."""
    X = X.toarray()
    columns = {}
    start = 0
    for name, categories in ADULT_ATTRIBUTES:
        group = X[:, start : start + len(categories)]
        assert group.sum(axis=1).max() <= 1, f"{name} is not one-hot"
        values = np.asarray(categories, dtype=object)[group.argmax(axis=1)]
        values[group.sum(axis=1) == 0] = MISSING
        columns[name] = values
        start += len(categories)
    assert start == X.shape[1] == 123
    return pd.DataFrame(columns)


def a9a_one_hot_encoder():
    """The OneHotEncoder that turns :func:`a9a_frame` back into a9a's matrix.

    Its categories are a9a's columns, in order; a missing value ("?") is an
    unknown category, so a group of zeros as in a9a.
    """
    return OneHotEncoder(categories=[c for _, c in ADULT_ATTRIBUTES], handle_unknown="ignore")


def a9a_mixed_frame(X):
    """Like :func:`a9a_frame`, the binned attributes as numbers (bin 1 to 5, 0/1)."""
    frame = a9a_frame(X)
    for name in ADULT_BINNED:
        categories = dict(ADULT_ATTRIBUTES)[name]
        frame[name] = frame[name].map({c: i for i, c in enumerate(categories)}).astype(float)
        if name not in ("capital-gain", "capital-loss"):
            frame[name] += 1
    return frame


def dna_sequences(X):
    """Each row of dna as its 60-base sequence, e.g. "CCAGCTGCAT..."."""
    bits = X.toarray().reshape(X.shape[0], 60, 3)
    assert bits.sum(axis=2).max() <= 1
    # A, C, G at their bit; T (no bit set) after them.
    index = np.where(bits.sum(axis=2) == 0, 3, bits.argmax(axis=2))
    letters = np.asarray(list(DNA_BASES))[index]
    return ["".join(row) for row in letters]


def dna_position_tokens(sequence):
    """Position-tagged bases ("p0=C", "p1=C", ...): an analyzer for HashingVectorizer."""
    return [f"p{position}={base}" for position, base in enumerate(sequence)]
