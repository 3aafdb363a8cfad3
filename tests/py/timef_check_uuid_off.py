#!/usr/bin/env python3
"""Runs ../shared/tools/timef_check.py, unchanged, with pyarrow's mapping of the
Parquet UUID logical type to its built-in `arrow.uuid` type turned off.

Why: timef_check.decode_ids decodes `fixed_size_binary(16)` (and Python
`pa.ExtensionType`s) to canonical strings, but pyarrow >= 21 reads a Parquet
UUID column as `arrow.uuid` by default (`arrow_extensions_enabled=True`), a
`BaseExtensionType` that decode_ids passes through as `uuid.UUID` objects, so
every uuid16 id space is then reported as "uuid16 but values are not canonical
UUIDs" whatever the file holds. With the mapping off pyarrow returns the
`fixed_size_binary(16)` storage the checker was written for. Nothing else changes.

usage: timef_check_uuid_off.py VERSION_DIR [timef_check.py options]
"""
import functools
import os
import runpy
import sys

import pyarrow.parquet as pq

pq.ParquetFile.__init__ = functools.partialmethod(pq.ParquetFile.__init__, arrow_extensions_enabled=False)
checker = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "tools", "timef_check.py")
sys.argv = [checker] + sys.argv[1:]
runpy.run_path(checker, run_name="__main__")
