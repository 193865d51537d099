"""flashbook: the presentation package of the book (labs, figures, widgets); the engine is ``labcore``."""
