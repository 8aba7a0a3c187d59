"""Running tasks elsewhere: worker processes of this machine (`processes`) and Ray tasks on a cluster
(`ray_tasks`). Serves every layer that runs many independent searches; imports none of them."""
