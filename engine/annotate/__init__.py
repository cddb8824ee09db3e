"""Annotation: the Annotator protocol (note, link, evolve stages), their typed answers, the offline annotator."""
