"""Analysis of finished runs: learning curves (`plots`), score reports (`report`) and bootstrap
statistics (`stats`). It reads run directories through `shoal.run.runs` and imports no
runtime or agent code, so comparing runs never imports the modules a run names.
"""
