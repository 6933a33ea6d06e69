"""Reading results back: compare, report with plots, predictions."""
