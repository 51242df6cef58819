"""Small learners of interpretable models, for experiments on what they reveal."""
