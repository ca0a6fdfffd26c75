"""Checkpoints and export: checkpoint files, training status and the retention of
``keep_checkpoints`` (:mod:`.files`), and the ONNX models Unity runs (:mod:`.onnx_export`).
"""
