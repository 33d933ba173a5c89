"""The live gateway: router.py (the live cascade), calls.py (calling a rung's model),
store.py (receipts in SQLite), metrics.py (the only module importing prometheus_client),
app.py (the HTTP routes; the only module importing Starlette and uvicorn)."""
