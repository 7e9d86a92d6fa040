"""The controls under a finished trace: ``bar`` (Fork from here, a row of steps, and the label
editor, frozen by the next cell), ``panel`` (the editor that runs a fork and shows its diff),
``label`` (👍 / 👎, a note, the expected answer), ``display`` (their static copy).
"""
