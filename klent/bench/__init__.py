"""Speed measurements and the analysis of match records; `klent bench <name>` runs `klent.bench.<name>.main`."""
