"""A --cloud-config file laid out as the kubelet lays out a mounted Secret: <dir>/<name> is a
symlink to ..data/<name>, and ..data a symlink to a versioned folder that is replaced
atomically (a new symlink renamed over ..data) on every update. The file's inode and
modification time say nothing about an update; only its bytes do."""
import json
import os


class SecretVolume:

    def __init__(self, root, name="cloud.conf"):
        self.dir = os.path.join(root, "secret-volume")
        os.makedirs(self.dir)
        self.name = name
        self.version = 0
        self.path = os.path.join(self.dir, name)

    def publish(self, content):
        """Makes `content` (text, or an object written as JSON) the file's bytes at once."""
        self.version += 1
        folder = "..v%d" % self.version
        os.makedirs(os.path.join(self.dir, folder))
        with open(os.path.join(self.dir, folder, self.name), "w") as f:
            f.write(content if isinstance(content, str) else json.dumps(content))
        tmp = os.path.join(self.dir, "..data_tmp")
        os.symlink(folder, tmp)
        os.replace(tmp, os.path.join(self.dir, "..data"))
        if not os.path.islink(self.path):
            os.symlink(os.path.join("..data", self.name), self.path)
        return self.path
