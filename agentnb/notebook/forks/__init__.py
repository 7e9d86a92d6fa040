"""Fork from here: ``bar`` (a row of steps under a finished trace, frozen by the next cell) and
``panel`` (the editor that runs a fork and shows its diff).
"""
