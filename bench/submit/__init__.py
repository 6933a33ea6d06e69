"""`python -m bench submit slurm|k8s`: one matrix as N shard jobs and a merge job on a scheduler users already run.

plan.py fixes what every engine shares (the matrix's settings file, each shard's command line, the merge's);
slurm.py and k8s.py only say how their engine runs those command lines.
"""
