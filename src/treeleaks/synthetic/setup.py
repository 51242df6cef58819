"""What the attacker and the evaluator share: the encoded population, PrivBayes's settings,
and what is released (synthetic rows for the black box, the fitted model for the white
box), with what the attack reads of a release about one target."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from treeleaks.synthetic.privbayes import PrivBayes
from treeleaks.synthetic.queries import answers, query_sets
from treeleaks.synthetic.white_box import model_features


@dataclass
class Setup:
    """The population (distinct encoded rows), its attributes' sizes, |X|, ε and the box."""

    population: np.ndarray
    sizes: list[int]
    n_private: int
    epsilon: float
    white_box: bool = False
    degree: int = 2
    sets: list[tuple[int, ...]] = field(init=False)

    def __post_init__(self) -> None:
        self.sets = query_sets(self.population.shape[1])

    def release(self, rows: np.ndarray, seed: int) -> PrivBayes | np.ndarray:
        """PrivBayes fitted on ``rows``: the model, or |rows| synthetic rows from it."""
        model = PrivBayes(self.epsilon, self.degree, random_state=seed).fit(rows, self.sizes)
        return model if self.white_box else model.sample(len(rows))

    def features(self, release: PrivBayes | np.ndarray, target: np.ndarray) -> np.ndarray:
        """What the meta-classifier reads of a release about one target."""
        if isinstance(release, PrivBayes):
            return model_features(release, target)
        return answers(release, target, self.sets)
