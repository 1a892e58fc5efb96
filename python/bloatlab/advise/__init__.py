"""What should I run? The advisor (docs/advise.md).

- :mod:`.path`: a path model (base RTT, rates, buffer, loss, limiter) and its
  twin scenario — from a measurement, a twin TOML file or numbers.
- :mod:`.recommend`: the candidates (sender congestion control × the queue the
  user controls) simulated on the twin, scored against a goal, explained.
- :mod:`.host`: the server operator's part — check, apply, revert the sysctls.
"""
