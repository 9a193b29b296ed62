# Scenario "files": a directory of 20 small config files with given content
# and mode, to show how each tool's cost grows with the number of tasks.
from io import StringIO

from pyinfra.operations import files

files.directory(name="config directory", path="/etc/nodeprov-bench", mode="755")
for i in range(1, 21):
    files.put(
        name=f"config file {i}",
        src=StringIO(f"setting_{i} = {i}\n"),
        dest=f"/etc/nodeprov-bench/file-{i}.conf",
        mode="640",
    )
