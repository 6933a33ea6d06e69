"""The values of the flint_serving column: how Flint was served. The model's own template, forced to answer with one
tool call each time, the project's fenced template (the model's own calls, read by llama.cpp's parser), or a template
of the user's own (followed by the first 12 hex digits of its sha256). Compare never pools two of them."""

NATIVE_SERVING, FORCED_SERVING = "native", "forced_tools"
FENCED_SERVING, OWN_TEMPLATE_SERVING = "native-fenced", "native-template:"
