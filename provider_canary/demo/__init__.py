"""`canary demo` on the built-in simulator: live rounds, or a simulated history of days.

* run               `canary demo`: the rounds and their tables
* settings          the demo's model, controls, time scale and quiet logs
* history           `canary demo --days N`: a history on a step clock
* pipeline          the history's rounds probed ahead (the round's own steps, flows/round.py)
* scenario          the history's admin events, builtin file and config
* simulator_process the simulator in a child process, on the history's clock
"""
