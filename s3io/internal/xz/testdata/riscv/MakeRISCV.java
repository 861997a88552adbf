// MakeRISCV writes the RISC-V BCJ test files of this directory with XZ for Java
// (org.tukaani:xz 1.10 or later, by the author of xz-utils), an encoder independent
// of the Go decoder under test: xz-utils 5.4, the version the tests run, has no
// RISC-V filter. Each file's check is SHA-256, so a decoder that reads one to the
// end with no error has reproduced its input exactly; the tests also compare the
// output's SHA-256 with the one this program prints.
//
//	apt-get download libc6-riscv64-cross   # Debian 12: 2.36-8cross1, RV64GC code
//	dpkg-deb -x libc6-riscv64-cross_*.deb x
//	mvn dependency:get -Dartifact=org.tukaani:xz:1.12
//	javac -cp ~/.m2/repository/org/tukaani/xz/1.12/xz-1.12.jar MakeRISCV.java
//	java -cp ~/.m2/repository/org/tukaani/xz/1.12/xz-1.12.jar:. MakeRISCV \
//	    x/usr/riscv64-linux-gnu/lib/libc.so.6
//
// The input: 96 KiB of libc.so.6's .text (compressed and full-size instructions,
// AUIPC pairs, JAL), then 8 KiB of instruction-shaped noise from a fixed seed:
// words whose low byte is JAL's or AUIPC's opcode with random registers and
// immediates, so that every branch of the decoder is taken.
import java.io.*;
import java.nio.file.*;
import java.security.MessageDigest;
import java.util.Random;
import org.tukaani.xz.*;

public class MakeRISCV {
    public static void main(String[] args) throws Exception {
        byte[] lib = Files.readAllBytes(Paths.get(args[0]));
        int text = 0x268c0 + 0x10000; // .text of 2.36-8cross1 (readelf -S), 64 KiB in
        byte[] plain = new byte[96 * 1024 + 8 * 1024];
        System.arraycopy(lib, text, plain, 0, 96 * 1024);
        Random r = new Random(29);
        for (int i = 96 * 1024; i < plain.length; i += 4) {
            int w = r.nextInt();
            switch (r.nextInt(4)) {
            case 0: w = (w & ~0x7f) | 0xef; break;          // JAL
            case 1: w = (w & ~0x7f) | 0x17; break;          // AUIPC, any rd
            case 2: w = (w & ~0xfff) | 0x17 | (r.nextBoolean() ? 0 : 2 << 7); break; // AUIPC x0/x2
            default: break;
            }
            plain[i] = (byte) w; plain[i + 1] = (byte) (w >> 8);
            plain[i + 2] = (byte) (w >> 16); plain[i + 3] = (byte) (w >> 24);
        }
        write("riscv-lzma2.xz", plain, 0);
        // A start offset near 2^32: the positions wrap around.
        byte[] tail = java.util.Arrays.copyOfRange(plain, 0, 16 * 1024);
        write("riscv-start-lzma2.xz", tail, 0xFFFFF002);
    }

    static void write(String name, byte[] plain, int start) throws Exception {
        RISCVOptions bcj = new RISCVOptions();
        bcj.setStartOffset(start);
        LZMA2Options lzma2 = new LZMA2Options(6);
        try (OutputStream out = new XZOutputStream(new FileOutputStream(name),
                new FilterOptions[] {bcj, lzma2}, XZ.CHECK_SHA256)) {
            out.write(plain);
        }
        // How many bytes the filter changed: a test of nothing would change none.
        byte[] filtered = plain.clone();
        new org.tukaani.xz.simple.RISCVEncoder(start).code(filtered, 0, filtered.length);
        int changed = 0;
        for (int i = 0; i < plain.length; i++) if (plain[i] != filtered[i]) changed++;
        StringBuilder sum = new StringBuilder();
        for (byte b : MessageDigest.getInstance("SHA-256").digest(plain)) sum.append(String.format("%02x", b));
        System.out.printf("%s: %d bytes, sha256 %s, %d bytes changed by the filter%n",
                name, plain.length, sum, changed);
    }
}
