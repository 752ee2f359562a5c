"""PayLedger helpers: synthetic history, landing-table loader and a SQL shell over the warehouse."""
