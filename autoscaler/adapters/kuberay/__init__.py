"""RayClusters no Kueue Workload admits (ISSUE 17): read as rows of their own, suspended."""
