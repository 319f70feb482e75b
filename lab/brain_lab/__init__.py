"""The measurement lab of brain-search: evaluation, benchmarks, fitting, their data and reports.

It imports the service's public functions only, and nothing in ``brain_search`` or ``workers``
imports it: the wheel and the image ship without it. ``paths`` says where its data and reports
live in a checkout."""
