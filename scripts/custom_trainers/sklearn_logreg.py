#!/usr/bin/python3
"""An easeml custom trainer using Debian's scikit-learn (python3-sklearn).

Classification: LogisticRegression (params: C, max_iter); regression: Ridge
(params: alpha).  Reports the validation accuracy or R^2 and keeps the
fitted estimator, pickled, as the run's artifact.  Register it with:

    SELECT easeml.add_custom_model('sk-logreg',
        ARRAY['/usr/bin/python3', '/path/to/scripts/custom_trainers/sklearn_logreg.py'],
        kinds => '{classification,regression}');
"""

import os
import pickle
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import easeml_custom as ec  # noqa: E402

from sklearn.linear_model import LogisticRegression, Ridge  # noqa: E402
from sklearn.metrics import accuracy_score, log_loss, r2_score  # noqa: E402


def main():
    task = ec.read_task()
    if task.kind == "classification":
        model = LogisticRegression(C=float(task.params.get("C", 1.0)),
                                   max_iter=int(task.params.get("max_iter", 200)))
        model.fit(task.x_train, task.y_train)
        # one report once the fit is done: the iterations it took, its loss
        n_iter = int(max(model.n_iter_))
        ec.progress(n_iter, log_loss(task.y_train, model.predict_proba(task.x_train),
                                     labels=model.classes_))
        score = accuracy_score(task.y_val, model.predict(task.x_val))
        extra = {"n_iter": n_iter}
    else:
        model = Ridge(alpha=float(task.params.get("alpha", 1.0)))
        model.fit(task.x_train, task.y_train)
        score = r2_score(task.y_val, model.predict(task.x_val))
        extra = {}
    if task.artifact_path:
        with open(task.artifact_path, "wb") as f:
            pickle.dump(model, f)
    ec.result(score, estimator=type(model).__name__, **extra)


if __name__ == "__main__":
    main()
