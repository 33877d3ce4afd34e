"""The stages of tools/notifier-series, one module per job."""

# One copy of the package: imported as tools.notifier_series beside
# notifier_series, each module would load twice, and an Error raised by
# one copy would escape the except clauses of the other.
if __name__ != "notifier_series":
    raise ImportError(f"import notifier_series with tools/ on sys.path "
                      f"(as tests/__init__.py does), not as {__name__}")
