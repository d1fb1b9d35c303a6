/* Prints the <sys/mman.h> values NativeMemory hard-codes, and the page size it reads, one "NAME value" per line. */
#define _GNU_SOURCE
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

int main(void) {
    printf("PROT_READ %d\n", PROT_READ);
    printf("PROT_WRITE %d\n", PROT_WRITE);
    printf("MAP_PRIVATE %d\n", MAP_PRIVATE);
    printf("MAP_ANONYMOUS %d\n", MAP_ANONYMOUS);
    printf("MAP_NORESERVE %d\n", MAP_NORESERVE);
    printf("MAP_HUGETLB %d\n", MAP_HUGETLB);
    printf("MADV_HUGEPAGE %d\n", MADV_HUGEPAGE);
    printf("MAP_FAILED %ld\n", (long) MAP_FAILED);
    printf("KERNEL_PAGE %ld\n", sysconf(_SC_PAGESIZE));
    return 0;
}
