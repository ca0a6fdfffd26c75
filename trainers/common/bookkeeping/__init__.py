"""Run bookkeeping: the statistics written to TensorBoard, CSV and the console
(:mod:`.stats`) and the progress line (:mod:`.progress`).
"""
