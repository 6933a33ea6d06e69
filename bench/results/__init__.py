"""The results CSV: its schema, appending rows, reading them back."""
