"""What a run stands on, below the IR and free of it: the errors treeleaks raises
(`errors.py`), the shared words `Status`, `Strategy` and `Formulation` (`vocabulary.py`),
default limits (`limits.py`), one run's clock (`clock.py`), progress events (`progress.py`)
and their rich renderings (`display.py`), output files written safely (`outputs.py`) and
input paths named as what they are when unreadable (`paths.py`). It imports nothing else
of treeleaks; this file imports nothing, so loading one module loads only what that module
imports."""
