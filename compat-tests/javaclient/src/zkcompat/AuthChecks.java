package zkcompat;

import java.security.MessageDigest;
import java.util.Arrays;
import java.util.Base64;
import java.util.List;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException.Code;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooDefs.Perms;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.data.ACL;
import org.apache.zookeeper.data.Id;
import org.apache.zookeeper.data.Stat;

/** digest authentication and ACL enforcement between sessions. */
final class AuthChecks {
    private AuthChecks() {}

    /** The digest scheme's id for "user:password". */
    static String digestId(String userPassword) throws Exception {
        byte[] sum = MessageDigest.getInstance("SHA1").digest(Ctx.bytes(userPassword));
        return userPassword.substring(0, userPassword.indexOf(':')) + ":" + Base64.getEncoder().encodeToString(sum);
    }

    static void register(Suite s, Ctx c) {
        s.add("auth digest with CREATOR_ALL_ACL denies other clients (NoAuth)", () -> {
            ZooKeeper alice = c.clients.connect();
            alice.addAuthInfo("digest", Ctx.bytes("alice:secret"));
            String p = alice.create(Ctx.path("acl"), Ctx.bytes("private"), ZooDefs.Ids.CREATOR_ALL_ACL, CreateMode.PERSISTENT);
            Stat st = new Stat();
            List<ACL> acl = alice.getACL(p, st);
            Assert.eq(Arrays.asList(new ACL(Perms.ALL, new Id("digest", digestId("alice:secret")))), acl, "stored ACL");
            Assert.eq(0, st.getAversion(), "aversion");
            Assert.fails(Code.NOAUTH, "getData without auth", () -> c.zk.getData(p, false, null));
            Assert.fails(Code.NOAUTH, "setData without auth", () -> c.zk.setData(p, new byte[0], -1));
            Assert.fails(Code.NOAUTH, "create child without auth", () -> c.zk.create(p + "/x", new byte[0], Ctx.OPEN, CreateMode.PERSISTENT));
            Assert.fails(Code.NOAUTH, "getChildren without auth", () -> c.zk.getChildren(p, false));
            Assert.fails(Code.NOAUTH, "setACL without auth", () -> c.zk.setACL(p, Ctx.OPEN, -1));
            ZooKeeper mallory = c.clients.connect();
            mallory.addAuthInfo("digest", Ctx.bytes("alice:wrong"));
            Assert.fails(Code.NOAUTH, "getData with the wrong password", () -> mallory.getData(p, false, null));
            ZooKeeper alice2 = c.clients.connect();
            alice2.addAuthInfo("digest", Ctx.bytes("alice:secret"));
            Assert.eq("private", Ctx.str(alice2.getData(p, false, null)), "data read by another session of alice");
            alice2.create(p + "/kid", new byte[0], Ctx.OPEN, CreateMode.PERSISTENT);
            Assert.fails(Code.NOAUTH, "delete child without auth", () -> c.zk.delete(p + "/kid", -1));
        });

        s.add("setACL opens a node for reading and bumps aversion", () -> {
            ZooKeeper bob = c.clients.connect();
            bob.addAuthInfo("digest", Ctx.bytes("bob:pw"));
            String p = bob.create(Ctx.path("acl-bob"), Ctx.bytes("b"), ZooDefs.Ids.CREATOR_ALL_ACL, CreateMode.PERSISTENT);
            List<ACL> readable = Arrays.asList(
                    new ACL(Perms.READ, ZooDefs.Ids.ANYONE_ID_UNSAFE),
                    new ACL(Perms.ALL, new Id("digest", digestId("bob:pw"))));
            Stat st = bob.setACL(p, readable, 0);
            Assert.eq(1, st.getAversion(), "aversion after setACL");
            Assert.eq("b", Ctx.str(c.zk.getData(p, false, null)), "data read without auth after setACL");
            Assert.fails(Code.NOAUTH, "setData without auth after setACL", () -> c.zk.setData(p, new byte[0], -1));
            Assert.fails(Code.BADVERSION, "setACL with a stale aversion", () -> bob.setACL(p, readable, 0));
        });

        String superUser = System.getenv("ZKCOMPAT_SUPER_USER");
        if (superUser != null && !superUser.isEmpty()) {
            // Registered only when the server was started with the matching
            // super digest (the Go test does so); otherwise it cannot pass.
            s.add("the super digest user bypasses ACLs", () -> {
                ZooKeeper owner = c.clients.connect();
                owner.addAuthInfo("digest", Ctx.bytes("carol:pw"));
                String p = owner.create(Ctx.path("acl-super"), Ctx.bytes("c"), ZooDefs.Ids.CREATOR_ALL_ACL, CreateMode.PERSISTENT);
                ZooKeeper root = c.clients.connect();
                root.addAuthInfo("digest", Ctx.bytes(superUser));
                Assert.eq("c", Ctx.str(root.getData(p, false, null)), "super reads");
                root.setData(p, Ctx.bytes("by super"), -1);
                root.setACL(p, Ctx.OPEN, -1);
                Assert.eq("by super", Ctx.str(c.zk.getData(p, false, null)), "data after super opened the ACL");
                Assert.fails(Code.NOAUTH, "a digest user that is not super", () -> {
                    ZooKeeper other = c.clients.connect();
                    other.addAuthInfo("digest", Ctx.bytes("super:wrong"));
                    String q = owner.create(Ctx.path("acl-super2"), new byte[0], ZooDefs.Ids.CREATOR_ALL_ACL, CreateMode.PERSISTENT);
                    other.getData(q, false, null);
                });
            });
        }

        s.add("CREATOR_ALL_ACL without authentication is InvalidACL", () -> {
            Assert.fails(Code.INVALIDACL, "create with CREATOR_ALL_ACL and no auth", () ->
                    c.zk.create(Ctx.path("acl-noauth"), new byte[0], ZooDefs.Ids.CREATOR_ALL_ACL, CreateMode.PERSISTENT));
            Assert.that(c.zk.exists(Ctx.path("acl-noauth"), false) == null, "node not created");
        });
    }
}
