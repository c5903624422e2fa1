"""Data files of the benchmarks and the scripts that prepare those not kept here."""
