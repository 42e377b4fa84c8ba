"""The UI: one module per tab, plus the shared figure and error helpers. Imports core, never the other way."""
