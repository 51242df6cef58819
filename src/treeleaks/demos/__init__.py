"""The `treeleaks demo` command's glue, which only the command line calls: the default demo
(`demo_raw.py`, a default scikit-learn forest rebuilt row by row), the binarized one
(`demo.py`, rows proved to be training rows), and the binarized demo's data set
(`demo_data.py`), which a sweep also loads as a built-in dataset without the glue. This
file imports nothing, so loading the data set loads neither demo."""
