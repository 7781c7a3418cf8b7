/** One named check of the suite; run throws (any Throwable) to fail it. */
interface Check {
    void run(Ctx ctx) throws Exception;
}
