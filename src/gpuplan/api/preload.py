"""Imported once by the API's fork server (:mod:`gpuplan.api.workers`): loads gpuplan's modules and
catalogs and runs one small search, so that every worker forked from it starts with warm caches.
Importing this module anywhere else only costs that warm-up."""

from gpuplan.api import work

work.warm()
